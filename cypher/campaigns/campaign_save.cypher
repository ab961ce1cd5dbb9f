
MATCH (c:Campaign {id: $id})
SET c += $props, c.updatedAt = $updatedAt, c.revision = c.revision + 1
RETURN c {.*} AS campaign
