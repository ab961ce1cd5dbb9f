
UNWIND $ids AS id
MATCH (p:Profile {profileId: id})
RETURN p.profileId AS id, $tenant IS NULL OR $tenant IN coalesce(p.tenants, []) AS ours
