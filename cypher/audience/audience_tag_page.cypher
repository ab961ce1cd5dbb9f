MATCH (:Tag {slug: $key})<-[:HAS_TAG]-(p:Profile)
WHERE p.profileId > $cursor AND $tenant IN p.tenants
WITH DISTINCT p.profileId AS profileId
ORDER BY profileId
LIMIT $limit
RETURN collect(profileId) AS profileIds
