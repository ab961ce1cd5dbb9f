
MATCH (d:Dispatch {status: 'scheduled'})-[:DISPATCH_OF]->(c:Campaign)
WHERE d.sendAt <= $now
RETURN DISTINCT d.scheduleId AS scheduleId, c.id AS campaignId
ORDER BY scheduleId
LIMIT $limit
