// The receiver and sealed ring of the profile ($tenant null) or of the tenant's view of it: a tenant
// rotates only the secret of the receiver it set (docs/people.md). No row: no such member.
MATCH (p:Profile {profileId: $profileId}) WHERE $tenant IS NULL OR $tenant IN p.tenants
OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = $tenant
WITH CASE WHEN $tenant IS NULL THEN p ELSE view END AS holder
RETURN holder.notificationsWebhook AS webhook, holder.notificationsWebhookKeys AS keys
