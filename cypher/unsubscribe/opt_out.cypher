
MATCH (p:Profile {campaignUnsubscribeId: $unsubscribeId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p, coalesce(p.announcementEmailOptOut, false) AS already
SET p.announcementEmailOptOut = true,
    p.announcementEmailOptOutAt = CASE WHEN already THEN p.announcementEmailOptOutAt ELSE $now END
RETURN already, p.profileId AS profileId, coalesce(p.tenants, []) AS tenants
