// Batch recheck just before the webhook POSTs: one row per job with the reason it must not be sent
// (null = send). Test deliveries (testId set) skip audience, age, opt-out and notifiedAt checks.
UNWIND $jobs AS job
OPTIONAL MATCH (c:Campaign {id: job.campaignId})
OPTIONAL MATCH (p:Profile {profileId: job.profileId})
WITH job, c, p,
     EXISTS { MATCH (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) } AS member,
     EXISTS { MATCH (p)-[s:CAMPAIGN_STATE]->(c) WHERE s.notifiedAt IS NOT NULL } AS notified
RETURN job.deliveryId AS deliveryId,
       CASE
         WHEN c IS NULL OR c.createdAt <> job.campaignCreatedAt THEN 'campaign_gone'
         WHEN p IS NULL THEN 'profile_gone'
         WHEN job.testId IS NOT NULL THEN null
         WHEN c.status <> 'live' THEN 'not_live'
         WHEN NOT 'notify' IN coalesce(c.channels, []) THEN 'notify_disabled'
         WHEN c.startsAt IS NOT NULL AND $now < c.startsAt THEN 'not_started'
         WHEN c.endsAt IS NOT NULL AND $now >= c.endsAt THEN 'ended'
         WHEN NOT member THEN 'not_member'
         WHEN coalesce(p.announcementPushOptOut, false) THEN 'opted_out'
         WHEN NOT {{CAMPAIGN_AGE_OK}} THEN 'age_policy'
         WHEN notified THEN 'already_notified'
         ELSE null
       END AS blocked,
       p.notificationsWebhook AS webhook,
       c.definition AS definition,
       coalesce(c.hasInAppMessage, false) AS hasInApp
