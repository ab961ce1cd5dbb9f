// leave, after lock_campaign: only a self-enrolled membership can be left; admin-added ones stay.
MATCH (:Profile {profileId: $profileId})-[m:IN_CAMPAIGN_AUDIENCE]->(:Campaign {id: $campaignId})
WHERE m.selfEnrolled
DELETE m
RETURN count(*) AS removed
