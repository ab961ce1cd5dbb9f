// Tenants: data made before tenants belongs to the default tenant, and a campaign's ref (the id its
// tenant knows it by, domain/tenancy.py) is its id; every profile is the default tenant's member. Audit
// entries follow, so audit.list's tenant seek finds the old trail.
MATCH (c:Campaign) WHERE c.ref IS NULL
WITH c LIMIT 10000
SET c.tenantId = coalesce(c.tenantId, $defaultTenant), c.ref = c.id
RETURN count(c) AS n
