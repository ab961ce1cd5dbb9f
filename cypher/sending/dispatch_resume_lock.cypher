
MATCH (d:Dispatch {id: $dispatchId})-[:DISPATCH_OF]->(c:Campaign {id: $campaignId})
SET d.casLock = coalesce(d.casLock, 0) + 1
WITH d, c
OPTIONAL MATCH (other:Dispatch {channel: d.channel})-[:DISPATCH_OF]->(c)
WHERE other.id <> d.id AND (other.status IN ['sending', 'paused'] OR other.startedAt > d.startedAt)
WITH d, c, other ORDER BY other.startedAt DESC LIMIT 1
RETURN d {.*, campaignId: c.id} AS dispatch, other {.id, .status} AS newer
