MATCH (a:AuditEntry) WHERE a.tenantId IS NULL
WITH a LIMIT 10000
SET a.tenantId = $defaultTenant
RETURN count(a) AS n
