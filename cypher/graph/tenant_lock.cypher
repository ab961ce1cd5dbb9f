// tenants.update, first write of its transaction: the record's write lock (docs/architecture.md §5), so
// the patch is merged into what no concurrent update can change before this one commits.
MATCH (t:Tenant {tenantId: $tenantId})
SET t.tenantLock = coalesce(t.tenantLock, 0) + 1
RETURN t {.*} AS tenant
