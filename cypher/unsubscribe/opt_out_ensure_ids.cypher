
UNWIND $rows AS row
MATCH (p:Profile {profileId: row.profileId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p, row
SET p.campaignUnsubscribeId = coalesce(p.campaignUnsubscribeId, row.candidate)
RETURN p.profileId AS profileId, p.campaignUnsubscribeId AS unsubscribeId
