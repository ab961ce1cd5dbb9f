// addAudience's tag source, one keyset page: the campaign tenant's members with tag $key as that tenant
// reads their tags (docs/people.md: its own HAS_TAG edges where its view named the list, else the
// shared ones; never another tenant's). Two index seeks after $cursor, each in profileId order and cut
// at $limit, merged and cut again: the tenant's own edges from tag_member_tenant (tenantId, slug,
// profileId), which holds no other tenant's, and the shared ones (no tenantId) from tag_member (slug,
// profileId). An own edge exists only while its view names the list (upsert_views.cypher), so it needs
// no view check; a shared edge counts only for a member whose list the tenant did not name.
CALL () {
  MATCH (p:Profile)-[g:HAS_TAG]->(:Tag)
  USING INDEX SEEK g:HAS_TAG(tenantId, slug, profileId)
  WHERE g.tenantId = $tenant AND g.slug = $key AND g.profileId > $cursor
    AND $tenant IN coalesce(p.tenants, [])
  WITH g ORDER BY g.tenantId, g.slug, g.profileId
  LIMIT $limit
  RETURN g.profileId AS profileId
  UNION
  MATCH (p:Profile)-[g:HAS_TAG]->(:Tag)
  USING INDEX SEEK g:HAS_TAG(slug, profileId)
  WHERE g.slug = $key AND g.profileId > $cursor AND g.tenantId IS NULL AND $tenant IN coalesce(p.tenants, [])
    AND NOT EXISTS { (p)-[:HAS_VIEW]->(v:TenantView) WHERE v.tenantId = $tenant AND v.tagsOwn }
  WITH g ORDER BY g.slug, g.profileId
  LIMIT $limit
  RETURN g.profileId AS profileId
}
WITH profileId ORDER BY profileId
LIMIT $limit
RETURN collect(profileId) AS profileIds
