// The forecast's backlog (campaigns/sending/plan.py): Dispatches of other campaigns still sending on
// the walked channels, by lane and tenant (by the index dispatch_status): the worker shares its pages
// between them and this send.
MATCH (d:Dispatch {status: 'sending'})-[:DISPATCH_OF]->(c:Campaign)
WHERE d.channel IN $channels AND c.id <> $campaignId
RETURN d.channel AS channel, coalesce(c.priority, 'normal') AS priority, coalesce(c.tenantId, '') AS tenant,
       count(d) AS dispatches
