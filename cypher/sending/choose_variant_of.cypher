
MATCH (d:Dispatch {id: $dispatchId})-[:DISPATCH_OF]->(c:Campaign)
RETURN c.id AS campaignId, c.createdAt AS createdAt, d.phase AS phase, c.abTest AS abTest
