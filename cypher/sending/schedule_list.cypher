
MATCH (d:Dispatch {scheduleId: $scheduleId, status: 'scheduled'})-[:DISPATCH_OF]->(c:Campaign)
RETURN d {.*} AS dispatch, c.createdAt AS createdAt
ORDER BY d.channel DESC
