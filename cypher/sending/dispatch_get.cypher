
MATCH (d:Dispatch {id: $dispatchId})-[:DISPATCH_OF]->(c:Campaign)
RETURN d {.*, campaignId: c.id} AS dispatch
