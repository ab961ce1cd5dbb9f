OPTIONAL MATCH (t:Tag {slug: $key})
RETURN t IS NOT NULL AND EXISTS { (t)<-[:HAS_TAG]-(p:Profile) WHERE $tenant IN p.tenants } AS exists
