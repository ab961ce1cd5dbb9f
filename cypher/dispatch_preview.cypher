// Reviewed-dispatch preview: audience counts plus the sorted eligible notify recipients, at most $cap
// of them (the caller passes max + 1 so "too many" is detectable without transferring the rest).
// The age placeholder below is replaced by graph.policy.CAMPAIGN_AGE_OK (the one age rule).
MATCH (c:Campaign {id: $campaignId})
CALL (c) {
  OPTIONAL MATCH (p:Profile)-[:IN_CAMPAIGN_AUDIENCE]->(c)
  OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
  RETURN count(DISTINCT p) AS audienceCount,
         count(DISTINCT CASE WHEN s.notifiedAt IS NOT NULL THEN p END) AS alreadyNotifiedCount
}
CALL (c) {
  MATCH (p:Profile)-[:IN_CAMPAIGN_AUDIENCE]->(c)
  WHERE $notify
    AND NOT coalesce(p.announcementPushOptOut, false)
    AND {{CAMPAIGN_AGE_OK}}
    AND NOT EXISTS { (p)-[s:CAMPAIGN_STATE]->(c) WHERE s.notifiedAt IS NOT NULL }
  WITH DISTINCT p.profileId AS profileId
  ORDER BY profileId
  LIMIT $cap
  RETURN collect(profileId) AS notifyIds
}
RETURN c {.*} AS campaign, audienceCount, alreadyNotifiedCount, notifyIds
