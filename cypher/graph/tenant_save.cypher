// tenants.update, after the merged record validated: a null in $props removes that property.
MATCH (t:Tenant {tenantId: $tenantId})
SET t += $props, t.updatedAt = $now
RETURN t {.*} AS tenant
