
UNWIND $campaignIds AS campaignId
MATCH (c:Campaign {id: campaignId}) USING INDEX c:Campaign(id)
WHERE c.hasSegment AND c.hasInAppMessage
RETURN c {.id, .ref, .tenantId, .updatedAt, .definition} AS campaign
