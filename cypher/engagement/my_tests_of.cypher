// getMyCampaigns' self-tests for many callers at once: each caller's pending test snapshots with the
// campaign's tenant and the roles granted to the caller there (campaigns/engagement/own_tests.py checks
// them with the caller's signed claims). Each caller starts at one profile (unique seek) and expands its
// CAMPAIGN_TEST edges only, which nobody but a test's sender holds, so a reader without tests costs a seek.
// replan=skip: an app call's plan seeks unique keys, which no statistic improves, and a replan under
// load stalls the process's calls behind its compile (test_hot_plans.py).
CYPHER replan=skip
UNWIND $profileIds AS profileId
MATCH (me:Profile {profileId: profileId})-[t:CAMPAIGN_TEST]->(c:Campaign) USING INDEX me:Profile(profileId)
OPTIONAL MATCH (g:AccessGrant {tenantId: c.tenantId, subject: profileId}) WHERE g.role IS NOT NULL
WITH profileId, c, t, collect(g.role) AS granted
RETURN profileId, c.id AS campaignId, c.tenantId AS tenantId, granted, t.testId AS testId,
       t.snapshot AS snapshot, t.createdAt AS createdAt
ORDER BY t.createdAt DESC
