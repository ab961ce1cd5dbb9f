// addAudience's tag source, one keyset page: the campaign tenant's members with tag $key as that tenant
// reads their tags (docs/people.md: its own HAS_TAG edges where its view named the list, else the
// shared ones; never another tenant's), read from the relationship index tag_member (slug, profileId)
// after $cursor, in its order, cut at $limit: a page costs the edges it reads.
MATCH (p:Profile)-[g:HAS_TAG]->(:Tag)
USING INDEX SEEK g:HAS_TAG(slug, profileId)
WHERE g.slug = $key AND g.profileId > $cursor AND $tenant IN coalesce(p.tenants, [])
  AND CASE WHEN EXISTS { (p)-[:HAS_VIEW]->(v:TenantView) WHERE v.tenantId = $tenant AND v.tagsOwn }
      THEN g.tenantId = $tenant ELSE g.tenantId IS NULL END
WITH g ORDER BY g.slug, g.profileId
LIMIT $limit
RETURN collect(g.profileId) AS profileIds
