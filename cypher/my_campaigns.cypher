// getMyCampaigns: the caller's live, in-window in-app campaigns where the caller is a member and passes
// the campaign age policy now, with the caller's own engagement state. Starts at one profile (unique
// seek) and expands its memberships, so cost grows with that profile's memberships only.
MATCH (p:Profile {profileId: $profileId})-[:IN_CAMPAIGN_AUDIENCE]->(c:Campaign)
WHERE c.status = 'live' AND c.hasInAppMessage
  AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
  AND {{CAMPAIGN_AGE_OK}}
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
RETURN c {.id, .definition, .startsAt, .endsAt, .messagePriority} AS campaign, s {.*} AS state
