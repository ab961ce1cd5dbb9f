
MATCH (p:Profile {profileId: $profileId})
OPTIONAL MATCH (p)-[:HAS_CONTACT_METHOD]->(m:ContactMethod)
DETACH DELETE m, p
RETURN count(DISTINCT p) AS deleted
