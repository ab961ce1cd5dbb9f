// The guardians each row names, checked before a minor's guardian set is written: whether
// the minor is a profile the writer may touch, whether each guardian is a profile of a tenant the minor
// belongs to (and of $tenant for a tenant credential), and whether the age policy holds it for an adult.
// Runs after upsert_profiles in the same transaction, so a guardian the same batch creates counts. One
// seek of the profileId constraint per name. The age rule is the campaign policy with excludeMinors
// (CAMPAIGN_AGE_OK over `p` and the map `c`, whose tenant is the writer's: the guardian's age is that
// tenant's view of them over the shared facts, as its routing reads it): a known minor, or a managed
// profile of unknown age, is refused here, as the routing to guardians would drop them.
// A dry run names in $assumed the profiles its file would create: such a minor counts as a member of
// $newTenant, the tenant new profiles join.
UNWIND $rows AS row
OPTIONAL MATCH (m:Profile {profileId: row.profileId}) WHERE $tenant IS NULL OR $tenant IN m.tenants
WITH row, CASE WHEN m IS NOT NULL THEN m.tenants WHEN row.profileId IN $assumed THEN [$newTenant] END AS minorTenants
UNWIND row.guardians AS named
OPTIONAL MATCH (p:Profile {profileId: named.profileId})
  WHERE minorTenants IS NOT NULL AND ($tenant IS NULL OR $tenant IN p.tenants)
    AND any(t IN coalesce(p.tenants, []) WHERE t IN minorTenants)
WITH row, named, minorTenants, p, {excludeMinors: true, tenantId: $tenant} AS c
{{TENANT_VIEW}}
RETURN row.profileId AS minor, named.profileId AS guardian, minorTenants IS NOT NULL AS minorFound,
       p IS NOT NULL AS found, p IS NOT NULL AND {{CAMPAIGN_AGE_OK}} AS adult
