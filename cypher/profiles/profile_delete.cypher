// The whole person: the profile, its contact methods, and every tenant's view with the view's own.
MATCH (p:Profile {profileId: $profileId})
OPTIONAL MATCH (p)-[:HAS_CONTACT_METHOD]->(m:ContactMethod)
OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView)
OPTIONAL MATCH (view)-[:HAS_CONTACT_METHOD]->(vm:ContactMethod)
DETACH DELETE m, vm, view, p
RETURN count(DISTINCT p) AS deleted
