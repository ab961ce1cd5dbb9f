// tenants.get: one record by id, a seek on tenant_id.
MATCH (t:Tenant {tenantId: $tenantId})
RETURN t {.*} AS tenant
