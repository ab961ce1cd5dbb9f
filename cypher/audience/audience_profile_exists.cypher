OPTIONAL MATCH (a:Profile {profileId: $key})
RETURN a IS NOT NULL AND $tenant IN a.tenants AS exists
