// The receiver each row's holder has now: the profile ($tenant null, the shared facts) or the tenant's
// view of it (docs/people.md; none yet: no receiver of the tenant's own). Bumps the profile's lock.
UNWIND $ids AS id
MATCH (p:Profile {profileId: id})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p
OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = $tenant
WITH p, CASE WHEN $tenant IS NULL THEN p ELSE view END AS holder
RETURN p.profileId AS profileId, holder.notificationsWebhook AS webhook,
       holder.notificationsWebhookKeys IS NOT NULL AS keyed
