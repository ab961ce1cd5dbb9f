
MATCH (k:ApiKey {id: $id}) WHERE $tenantId IS NULL OR k.tenantId = $tenantId
SET k.revokedAt = coalesce(k.revokedAt, $now)
RETURN k {.*} AS key
