// tenants.list and the TenantDirectory: keyset pages in tenantId order, a range seek on tenant_id.
MATCH (t:Tenant)
WHERE t.tenantId > $cursor
RETURN t {.*} AS tenant
ORDER BY t.tenantId
LIMIT $limit
