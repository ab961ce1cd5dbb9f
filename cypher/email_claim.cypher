// The email claim: the caller has locked the profiles (ascending profileId) in this transaction and
// checked the campaign guard. Every recipient rule is rechecked here, under the lock; eligible ones get
// emailClaimedAt plus this attempt's claimId, which is what a later release must match.
MATCH (c:Campaign {id: $campaignId})
WHERE c.createdAt = $campaignCreatedAt
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
WITH p, c, s, {{PRIMARY_EMAILS}} AS emails
WITH p, c, emails,
     CASE
       WHEN NOT EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) } THEN 'not_member'
       WHEN coalesce(p.announcementEmailOptOut, false) THEN 'opted_out'
       WHEN NOT {{EMAIL_AGE_OK}} THEN 'age_policy'
       WHEN NOT {{EMAIL_CONTACT_OK}} THEN 'no_email'
       WHEN s.emailClaimedAt IS NOT NULL OR s.emailedAt IS NOT NULL THEN 'already_claimed'
       ELSE null
     END AS blocked
CALL (p, c, blocked) {
  WITH p, c, blocked
  WHERE blocked IS NULL
  MERGE (p)-[st:CAMPAIGN_STATE]->(c)
  SET st.emailClaimedAt = $now, st.emailClaimId = $claimId, st.emailDispatchId = $dispatchId,
      st.emailOutcome = 'claimed', st.emailOutcomeReason = null
}
RETURN p.profileId AS profileId, blocked, CASE WHEN blocked IS NULL THEN emails[0] END AS address
ORDER BY profileId
