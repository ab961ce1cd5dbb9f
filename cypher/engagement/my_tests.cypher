// getMyCampaigns for an admin: that admin's pending self-test snapshots (status and dates ignored).
MATCH (:Profile {profileId: $profileId})-[t:CAMPAIGN_TEST]->(c:Campaign)
RETURN c.id AS campaignId, t.testId AS testId, t.snapshot AS snapshot, t.createdAt AS createdAt
ORDER BY t.createdAt DESC
