// sendTestToMe (inApp part), after lock_profiles([$profileId]): one pending snapshot per admin and
// campaign; a newer test replaces the older one (and its testId). Never touches audience or state.
MATCH (p:Profile {profileId: $profileId}), (c:Campaign {id: $campaignId})
MERGE (p)-[t:CAMPAIGN_TEST]->(c)
SET t.testId = $testId, t.snapshot = $snapshot, t.createdAt = $now
RETURN t.testId AS testId
