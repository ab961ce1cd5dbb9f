
MATCH (d:Dispatch {status: 'sending'})-[:DISPATCH_OF]->(c:Campaign)
WITH d, c, reduce(latest = d.lastProgressAt, t IN [d.rearmedAt, d.lastFailureAt] |
                  CASE WHEN t IS NOT NULL AND t > latest THEN t ELSE latest END) AS lastTouched
WHERE (d.nextPageAt IS NOT NULL AND d.nextPageAt <= $now)
   OR (d.nextPageAt IS NULL AND lastTouched < $stuckBefore)
OPTIONAL MATCH (t:Tenant {tenantId: c.tenantId})
RETURN d.id AS dispatchId, c.id AS campaignId, d.campaignCreatedAt AS campaignCreatedAt,
       d.channel AS channel, d.cursor AS cursor, d.nextPageAt IS NOT NULL AS wave,
       c.priority AS priority, c.tenantId AS tenantId, t.weight AS weight
ORDER BY d.id
LIMIT $limit
