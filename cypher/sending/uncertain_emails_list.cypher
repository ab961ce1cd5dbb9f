
OPTIONAL MATCH (d:Dispatch {id: $dispatchId})
CALL (d) {
  WITH d
  WHERE d IS NOT NULL
  MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign)
  USING INDEX s:CAMPAIGN_STATE(emailOutcome, emailClaimedAt)
  WHERE s.emailOutcome = 'uncertain' AND s.emailClaimedAt IS NOT NULL AND s.emailDispatchId = $dispatchId
    AND p.profileId > $after
  WITH p, s
  ORDER BY p.profileId
  LIMIT $limit
  RETURN collect({profileId: p.profileId, reason: s.emailOutcomeReason, claimedAt: s.emailClaimedAt,
                  outcomeAt: s.emailOutcomeAt}) AS items
}
RETURN d IS NOT NULL AS found, items
