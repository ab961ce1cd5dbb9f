// Whether tag $key names a member of the tenant, as the tenant reads their tags (audience_tag_page).
OPTIONAL MATCH (t:Tag {slug: $key})
RETURN t IS NOT NULL AND EXISTS {
  (t)<-[g:HAS_TAG]-(p:Profile)
  WHERE $tenant IN coalesce(p.tenants, [])
    AND CASE WHEN EXISTS { (p)-[:HAS_VIEW]->(v:TenantView) WHERE v.tenantId = $tenant AND v.tagsOwn }
        THEN g.tenantId = $tenant ELSE g.tenantId IS NULL END
} AS exists
