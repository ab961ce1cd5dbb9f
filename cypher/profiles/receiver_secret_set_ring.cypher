// The profile's lock, then the ring on its holder: the profile ($tenant null) or the tenant's view.
MATCH (p:Profile {profileId: $profileId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p
OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = $tenant
WITH p, view
CALL (p, view) {
  WITH p, view WHERE $keys IS NOT NULL AND $tenant IS NULL
  SET p.notificationsWebhookKeys = $keys
}
CALL (view) {
  WITH view WHERE $keys IS NOT NULL AND view IS NOT NULL
  SET view.notificationsWebhookKeys = $keys
}
