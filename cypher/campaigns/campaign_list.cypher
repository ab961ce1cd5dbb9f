
MATCH (c:Campaign)
WHERE c.tenantId = $tenantId AND c.ref > $cursor AND ($status IS NULL OR c.status = $status)
RETURN c {.*} AS campaign
ORDER BY c.tenantId, c.ref
LIMIT $limit
