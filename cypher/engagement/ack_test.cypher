// recordEvent with a testId, after lock_profiles: removes the pending snapshot only when it is still
// the current one, so a late acknowledgement of an older test cannot remove a newer snapshot.
MATCH (:Profile {profileId: $profileId})-[t:CAMPAIGN_TEST]->(:Campaign {id: $campaignId})
WHERE t.testId = $testId
DELETE t
RETURN count(*) AS removed
