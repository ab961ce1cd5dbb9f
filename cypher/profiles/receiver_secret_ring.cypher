
MATCH (p:Profile {profileId: $profileId}) WHERE $tenant IS NULL OR $tenant IN p.tenants
RETURN p.notificationsWebhook AS webhook, p.notificationsWebhookKeys AS keys
