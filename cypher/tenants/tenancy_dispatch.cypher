
MATCH (d:Dispatch {id: $dispatchId})-[:DISPATCH_OF]->(c:Campaign)
WHERE c.tenantId = $tenantId
RETURN d.id AS id
