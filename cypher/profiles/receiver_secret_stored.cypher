
UNWIND $ids AS id
MATCH (p:Profile {profileId: id})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
RETURN p.profileId AS profileId, p.notificationsWebhook AS webhook,
       p.notificationsWebhookKeys IS NOT NULL AS keyed
