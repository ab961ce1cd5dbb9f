
MATCH (d:Dispatch {id: $dispatchId})-[:DISPATCH_OF]->(c:Campaign)
RETURN c.id AS campaignId, d.scheduleId AS scheduleId
