// Replace the connection set of each row that provides one; only existing profiles can be connected.
// A tenant credential ($tenant not null) sees and replaces only connections to its own members: those
// another tenant made stay, and a profile outside the tenant counts as missing.
UNWIND $rows AS row
MATCH (p:Profile {profileId: row.profileId})
OPTIONAL MATCH (p)-[old:CONNECTED_WITH]-(o:Profile) WHERE $tenant IS NULL OR $tenant IN o.tenants
DELETE old
WITH DISTINCT p, row
UNWIND row.connections AS otherId
OPTIONAL MATCH (other:Profile {profileId: otherId}) WHERE $tenant IS NULL OR $tenant IN other.tenants
FOREACH (_ IN CASE WHEN other IS NULL OR other = p THEN [] ELSE [1] END | MERGE (p)-[:CONNECTED_WITH]-(other))
RETURN sum(CASE WHEN other IS NULL THEN 1 ELSE 0 END) AS missing
