// Replace the connection set of each row that provides one; only existing profiles can be connected.
// $tenant null (a platform credential) replaces the shared links (no tenantId). A tenant's replaces
// only its own (`tenantId: $tenant`, docs/people.md), to its own members, and marks its view as naming
// the list (`connectionsOwn`: `row.own`, null when the row cleared it to fall back to the shared links);
// a profile outside the tenant counts as missing. A link has two ends: the other end's list becomes the
// tenant's own too, seeded with its shared links within the tenant, so it keeps them and gains this one.
// CREATE after a look, not MERGE: MERGE would take a link of another scope for this one.
UNWIND $rows AS row
MATCH (p:Profile {profileId: row.profileId})
OPTIONAL MATCH (p)-[old:CONNECTED_WITH]-(:Profile)
  WHERE ($tenant IS NULL AND old.tenantId IS NULL) OR old.tenantId = $tenant
DELETE old
WITH DISTINCT p, row
CALL (p, row) {
  WITH p, row WHERE $tenant IS NOT NULL
  MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = $tenant
  SET view.connectionsOwn = row.own
}
UNWIND row.connections AS otherId
OPTIONAL MATCH (other:Profile {profileId: otherId}) WHERE $tenant IS NULL OR $tenant IN other.tenants
CALL (p, other) {
  WITH p, other WHERE $tenant IS NOT NULL AND other IS NOT NULL AND other <> p
  MERGE (seen:TenantView {tenantId: $tenant, profileId: other.profileId})
  MERGE (other)-[:HAS_VIEW]->(seen)
  WITH other, seen WHERE seen.connectionsOwn IS NULL
  SET seen.connectionsOwn = true
  WITH other
  MATCH (other)-[shared:CONNECTED_WITH]-(x:Profile) WHERE shared.tenantId IS NULL AND $tenant IN x.tenants
  CREATE (other)-[:CONNECTED_WITH {tenantId: $tenant}]->(x)
}
CALL (p, other) {
  WITH p, other WHERE other IS NOT NULL AND other <> p
    AND NOT EXISTS { (p)-[e:CONNECTED_WITH]-(other) WHERE (e.tenantId IS NULL AND $tenant IS NULL) OR e.tenantId = $tenant }
  CREATE (p)-[link:CONNECTED_WITH]->(other)
  SET link.tenantId = $tenant
}
RETURN sum(CASE WHEN other IS NULL THEN 1 ELSE 0 END) AS missing
