MATCH (p:Profile)
WHERE p.profileId > $cursor AND $tenant IN p.tenants
WITH p.profileId AS profileId
ORDER BY profileId
LIMIT $limit
RETURN collect(profileId) AS profileIds
