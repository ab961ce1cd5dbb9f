// One keyset page of campaign members after $cursor, in profileId order. The seek and the order come
// from the relationship index audience_member (campaignId, profileId), so a page costs the members it
// reads, whatever the share of the audience in all profiles; never SKIP, never a sort of the audience.
// Every member read moves the cursor; only eligible ones get a delivery. One record per page (how many
// members it read, the last one, the eligible ids): a record per member cost the worker more driver CPU
// than the rest of the page's work.
MATCH (p:Profile)-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign)
USING INDEX m:IN_CAMPAIGN_AUDIENCE(campaignId, profileId)
WHERE m.campaignId = $campaignId AND m.profileId > $cursor
WITH p, c, m
ORDER BY m.campaignId, m.profileId
LIMIT $limit
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
WITH p.profileId AS profileId,
     (NOT coalesce(p.announcementPushOptOut, false) AND s.notifiedAt IS NULL AND {{CAMPAIGN_AGE_OK}})
       AS eligible
RETURN count(*) AS read, max(profileId) AS last, collect(CASE WHEN eligible THEN profileId END) AS eligible
