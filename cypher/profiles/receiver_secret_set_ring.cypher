
MATCH (p:Profile {profileId: $profileId})
SET p.notificationsWebhookKeys = $keys, p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
