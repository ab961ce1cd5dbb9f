
UNWIND $ids AS id
MATCH (p:Profile {profileId: id}) WHERE NOT $tenant IN coalesce(p.tenants, [])
RETURN count(p) AS foreign
