// One keyset page of campaign members after $cursor, in profileId order. The hint pins the plan to an
// ordered range seek on the profileId index, so a page costs the profiles it scans, never a sort of the
// whole audience. Every member read moves the cursor; only eligible ones get a delivery.
MATCH (c:Campaign {id: $campaignId})
MATCH (p:Profile)
USING INDEX p:Profile(profileId)
WHERE p.profileId > $cursor AND EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) }
WITH c, p
ORDER BY p.profileId
LIMIT $limit
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
RETURN p.profileId AS profileId,
       (NOT coalesce(p.announcementPushOptOut, false) AND s.notifiedAt IS NULL AND $$CAMPAIGN_AGE_OK$$)
         AS eligible
ORDER BY profileId
