MATCH (a:Profile {profileId: $key})-[:CONNECTED_WITH]-(p:Profile)
WHERE p <> a AND p.profileId > $cursor AND $tenant IN p.tenants
WITH DISTINCT p.profileId AS profileId
ORDER BY profileId
LIMIT $limit
RETURN collect(profileId) AS profileIds
