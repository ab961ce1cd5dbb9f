
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
RETURN p.profileId AS profileId
