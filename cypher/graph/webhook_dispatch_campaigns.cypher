
UNWIND $dispatchIds AS dispatchId
MATCH (d:Dispatch {id: dispatchId})-[:DISPATCH_OF]->(c:Campaign)
RETURN d.id AS dispatchId, d.channel AS channel, c.tenantId AS tenantId, coalesce(c.ref, c.id) AS campaignId
