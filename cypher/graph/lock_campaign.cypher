
MATCH (c:Campaign {id: $campaignId})
SET c.campaignStateLock = coalesce(c.campaignStateLock, 0) + 1
WITH c
WHERE c:Campaign
RETURN c {.*} AS campaign
