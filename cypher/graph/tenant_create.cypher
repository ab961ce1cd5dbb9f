// tenants.create: a new record, or no row when the tenantId is taken (CONFLICT). Two creates racing past
// the OPTIONAL MATCH meet the tenant_id constraint, which graph/tenants.py answers as CONFLICT too.
OPTIONAL MATCH (existing:Tenant {tenantId: $tenantId})
WITH existing WHERE existing IS NULL
CREATE (t:Tenant {tenantId: $tenantId})
SET t += $props, t.createdAt = $now, t.updatedAt = $now
RETURN t {.*} AS tenant
