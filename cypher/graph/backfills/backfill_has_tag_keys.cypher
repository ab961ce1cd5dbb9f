// Live segments: a tag seek reads the tag_member index (slug, profileId) of HAS_TAG, which
// upsert_profiles.cypher writes; links made before carry neither.
MATCH (p:Profile)-[g:HAS_TAG]->(t:Tag) WHERE g.slug IS NULL
WITH p, g, t LIMIT 10000
SET g.slug = t.slug, g.profileId = p.profileId
RETURN count(g) AS n
