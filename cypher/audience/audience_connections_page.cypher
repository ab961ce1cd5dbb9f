// addAudience's connections source, one keyset page: the members of the tenant in profile $key's
// connection list as the tenant reads it (docs/people.md: the tenant's own CONNECTED_WITH edges where
// its view of $key named the list, else the shared ones; never another tenant's).
MATCH (a:Profile {profileId: $key})
WITH a, EXISTS { (a)-[:HAS_VIEW]->(v:TenantView) WHERE v.tenantId = $tenant AND v.connectionsOwn } AS own
MATCH (a)-[r:CONNECTED_WITH]-(p:Profile)
WHERE p <> a AND p.profileId > $cursor AND $tenant IN coalesce(p.tenants, [])
  AND CASE WHEN own THEN r.tenantId = $tenant ELSE r.tenantId IS NULL END
WITH DISTINCT p.profileId AS profileId
ORDER BY profileId
LIMIT $limit
RETURN collect(profileId) AS profileIds
