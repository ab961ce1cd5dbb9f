
MATCH (d:Dispatch)-[:DISPATCH_OF]->(c:Campaign {id: $campaignId})
RETURN d {.*, campaignId: c.id} AS dispatch
ORDER BY coalesce(d.startedAt, d.scheduledAt) DESC, d.id
LIMIT 200
