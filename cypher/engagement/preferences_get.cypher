// The caller's opt-outs: deployment-wide, or as one tenant honours them ($tenantId: its view's or the
// deployment-wide choice, docs/people.md). `member`: $tenantId is one of the person's tenants.
MATCH (p:Profile {profileId: $profileId})
OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = $tenantId
RETURN {{EMAIL_OPTED_OUT}} AS email, {{PUSH_OPTED_OUT}} AS push,
       $tenantId IS NULL OR $tenantId IN coalesce(p.tenants, []) AS member
