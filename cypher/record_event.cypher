// recordEvent, after lock_profiles([$profileId]) in the same transaction: the profile lock serialises
// every device of this profile, so "no state yet -> CREATE" cannot run twice and no increment is lost.
// (Not MERGE: its locking variant also locks the campaign node, serialising every recipient's events.)
// {{EVENT}} is one of shown|clicked|dismissed (a closed set checked in Python before substitution).
// Two unique seeks, then the membership check as Expand(Into): cost is independent of audience size.
MATCH (p:Profile {profileId: $profileId})
MATCH (c:Campaign {id: $campaignId}) USING INDEX c:Campaign(id)
WHERE c.status = 'live' AND EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) }
  AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
  AND {{CAMPAIGN_AGE_OK}}
OPTIONAL MATCH (p)-[existing:CAMPAIGN_STATE]->(c)
CALL (p, c, existing) {
  WITH p, c, existing WHERE existing IS NULL
  CREATE (p)-[s:CAMPAIGN_STATE]->(c)
  RETURN s
  UNION
  WITH existing WHERE existing IS NOT NULL
  RETURN existing AS s
}
SET s.{{EVENT}}FirstAt = coalesce(s.{{EVENT}}FirstAt, $now),
    s.{{EVENT}}LastAt = $now,
    s.{{EVENT}}Count = coalesce(s.{{EVENT}}Count, 0) + 1,
    s.lastActionId = coalesce($actionId, s.lastActionId)
RETURN s {.*} AS state
