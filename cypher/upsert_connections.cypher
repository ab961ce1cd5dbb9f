// Replace the connection set of each row that provides one; only existing profiles can be connected.
UNWIND $rows AS row
MATCH (p:Profile {profileId: row.profileId})
OPTIONAL MATCH (p)-[old:CONNECTED_WITH]-(:Profile)
DELETE old
WITH DISTINCT p, row
UNWIND row.connections AS otherId
OPTIONAL MATCH (other:Profile {profileId: otherId})
FOREACH (_ IN CASE WHEN other IS NULL OR other = p THEN [] ELSE [1] END | MERGE (p)-[:CONNECTED_WITH]-(other))
RETURN sum(CASE WHEN other IS NULL THEN 1 ELSE 0 END) AS missing
