// removeAudience, one chunk, after lock_campaign. Removes memberships whatever their origin or age.
MATCH (c:Campaign {id: $campaignId})
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})-[m:IN_CAMPAIGN_AUDIENCE]->(c)
DELETE m
RETURN count(m) AS removed
