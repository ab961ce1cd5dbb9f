// exports/campaigns/{id}/recipients for a campaign with a live segment: one keyset page of its
// static members, its segment's matches now and everyone it reached before (a state: sent, capped,
// engaged) who matches no longer, with what happened to each, as export_recipients.cypher answers a
// static campaign. The page head is the walks' own union (graph/rules/segment.py); the reached arm reads
// the campaign's states and keeps the first $limit after the cursor, so a page costs the campaign's
// states (a top-n, the cost an unordered segment seek has too; see "Live segments" in the architecture).
// `source`: the membership's, else `segment` for a match now (a row of the head: the head's page holds
// every member before this one, so the rule is not tested twice), else `reached`. eligibleNow reads the
// campaign tenant's view of each person (TENANT_VIEW; docs/people.md).
CALL () {
  {{AUDIENCE_PAGE}}
  RETURN p, c, true AS now
  UNION
  MATCH (c:Campaign {id: $campaignId}) USING INDEX c:Campaign(id)
  MATCH (p:Profile)-[:CAMPAIGN_STATE]->(c)
  WHERE p.profileId > $cursor
  WITH p, c ORDER BY p.profileId LIMIT $limit
  RETURN p, c, false AS now
}
WITH p, c, true IN collect(now) AS now
ORDER BY p.profileId
LIMIT $limit
OPTIONAL MATCH (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
{{TENANT_VIEW}}
RETURN p.profileId AS profileId,
       CASE WHEN m IS NOT NULL THEN m.source WHEN now THEN 'segment' ELSE 'reached' END AS source,
       coalesce(m.selfEnrolled, false) AS selfEnrolled,
       m.addedAt AS addedAt, {{CAMPAIGN_AGE_OK}} AS eligibleNow,
       s.notifiedAt AS notifiedAt, s.notifyCappedAt AS notifyCappedAt,
       s.emailedAt AS emailedAt, s.emailOutcome AS emailOutcome, s.emailOutcomeReason AS emailOutcomeReason,
       s.emailCappedAt AS emailCappedAt, s.bouncedAt AS bouncedAt, s.complainedAt AS complainedAt,
       s.emailClickedAt AS emailClickedAt, s.unsubscribedAt AS unsubscribedAt,
       coalesce(s.shownCount, 0) AS shown, coalesce(s.clickedCount, 0) AS clicked,
       coalesce(s.dismissedCount, 0) AS dismissed, s.variantId AS variantId
