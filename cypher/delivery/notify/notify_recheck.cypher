// Batch recheck just before the webhook POSTs. Test deliveries (testId set) skip audience, age,
// opt-out and notifiedAt checks. 'duplicate': this job's own dispatch already has the recipient's
// acknowledgement (a redelivered message), which is settled, not a suppression to count again. One record for the whole batch: parallel lists (the reason a job must
// not be sent, '' = send; the profile's own webhook, '' = none; its sealed secrets, '' = none (issue
// 22: they ride with the URL, so signing costs no extra read); the profile's locale, which picks the
// copy's language; '' because collect skips nulls) keyed
// by deliveryId, each sendable campaign's copy once, and the dispatch of each job this statement was the
// first to hold back by the frequency cap. A record per job cost the worker ~40 us of driver CPU per
// recipient and carried the whole definition on every row.
// Without CAMPAIGN_FREQUENCY_CAPS for notify the two placeholders are filled with nothing and this is
// the read it always was. With one, delivery/frequency_cap.py fills the first (NOTIFY_CAP_LOCK: the
// profile lock, taken first, in the ascending profileId order of $jobs) and the second (NOTIFY_CAP:
// cypher/notify_cap.cypher, reserve a slot or hold back under that lock), and the statement runs in a
// write transaction.
// pagedMember: the job of a campaign with a live segment, whose page matched the profile
// moments ago; the rule is the page's to evaluate (graph/rules/segment.py), not this statement's.
// ROUTED_MEMBER (only in a batch holding a guardian's job; else nothing): a job with
// routedFrom stands for membership while the campaign still routes minors and the guardian is still
// linked with consent granted to one of the members routed to them; every other rule holds as for members.
// The recipient's facts are the campaign tenant's view over the shared ones (docs/people.md; `view`,
// TENANT_VIEW): the age rule, the locale, and the receiver, read as a pair with its sealed ring (the
// view's URL and ring where the tenant set a receiver, else the shared pair), so a tenant's notification
// never goes to a receiver another tenant set, nor signed with a ring another tenant holds. `facts`
// carries them past the frequency cap's fragment, which keeps only the variables it names.
// replan=skip: every lookup is a unique-key seek, so statistics cannot improve the plan, and a
// send moving CAMPAIGN_STATE counts fast otherwise replans (and JIT-compiles) it every few seconds.
CYPHER replan=skip
UNWIND $jobs AS job
OPTIONAL MATCH (p:Profile {profileId: job.profileId})
{{NOTIFY_CAP_LOCK}}
OPTIONAL MATCH (c:Campaign {id: job.campaignId})
{{TENANT_VIEW}}
WITH job, c, p, view,
     {{ROUTED_MEMBER}}job.pagedMember OR EXISTS { MATCH (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) } AS member,
     [(p)-[s:CAMPAIGN_STATE]->(c) WHERE s.notifiedAt IS NOT NULL | coalesce(s.notifiedDispatchId, '')]
       AS notifiedBy,
     CASE WHEN view.notificationsWebhook IS NOT NULL THEN view ELSE p END AS route
WITH job, c, p,
     {webhook: route.notificationsWebhook, keys: route.notificationsWebhookKeys,
      locale: coalesce(view.locale, p.locale), did: p.did} AS facts,
     CASE
       WHEN c IS NULL OR c.createdAt <> job.campaignCreatedAt THEN 'campaign_gone'
       WHEN p IS NULL THEN 'profile_gone'
       WHEN job.testId IS NOT NULL THEN null
       WHEN c.status <> 'live' THEN 'not_live'
       WHEN NOT 'notify' IN coalesce(c.channels, []) THEN 'notify_disabled'
       WHEN c.startsAt IS NOT NULL AND $now < c.startsAt THEN 'not_started'
       WHEN c.endsAt IS NOT NULL AND $now >= c.endsAt THEN 'ended'
       WHEN NOT member THEN 'not_member'
       WHEN {{PUSH_OPTED_OUT}} THEN 'opted_out'
       WHEN NOT {{CAMPAIGN_AGE_OK}} THEN 'age_policy'
       WHEN job.dispatchId IN notifiedBy THEN 'duplicate'
       WHEN size(notifiedBy) > 0 THEN 'already_notified'
       ELSE null
     END AS blocked
{{NOTIFY_CAP}}
RETURN collect(job.deliveryId) AS deliveryIds,
       collect(coalesce(blocked, '')) AS blocked,
       collect(coalesce(facts.webhook, '')) AS webhooks,
       collect(coalesce(facts.keys, '')) AS webhookKeys,
       collect(coalesce(facts.locale, '')) AS locales,
       collect(coalesce(facts.did, '')) AS dids,
       collect(DISTINCT CASE WHEN blocked IS NULL
                          THEN [c.id, c.definition, coalesce(c.hasInAppMessage, false), c.abTest, c.tenantId]
                        END) AS campaigns,
       collect(CASE WHEN firstCapped THEN job.dispatchId END) AS capped
