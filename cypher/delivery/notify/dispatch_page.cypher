// One keyset page of campaign members after $cursor, in profileId order. The seek and the order come
// from the relationship index audience_member (campaignId, profileId), so a page costs the members it
// reads, whatever the share of the audience in all profiles; never SKIP, never a sort of the audience.
// Every member read moves the cursor; only eligible ones get a delivery. One record per page (how many
// members it read, the last one, the eligible ids): a record per member cost the worker more driver CPU
// than the rest of the page's work.
// Readiness (delivery/readiness.py): $readyAt maps every tz database zone to the instant its
// recipients may receive (per-recipient wave, then quiet hours), $fallbackReadyAt serves a missing or
// unknown zone. Not yet ready: read (the cursor moves) but not sent, counted deferred, and the earliest
// such instant returned for the next pass. Ready since before $staleBefore (a schedule's maxLateSeconds;
// null = never stale): missed, not sent. With neither rule the map is empty and every member is ready.
// The AUDIENCE_PAGE placeholder: graph/rules/policy.py's static page, or with a live segment its seeks beside it in one
// ordered union (graph/rules/segment.py); either way `p` and `c` for at most $limit members in order.
// Each member's facts are the campaign tenant's view of them over the shared ones (docs/people.md):
// `view` is bound once per member (TENANT_VIEW) and every fact below reads it first.
{{AUDIENCE_PAGE}}
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
{{TENANT_VIEW}}
WITH p.profileId AS profileId,
     coalesce($readyAt[coalesce(view.timeZone, p.timeZone)], $fallbackReadyAt) AS readyAt,
     (NOT {{PUSH_OPTED_OUT}} AND s.notifiedAt IS NULL AND {{CAMPAIGN_AGE_OK}})
       AS eligible
WITH profileId, readyAt,
     CASE
       WHEN NOT eligible THEN 'skip'
       WHEN readyAt > $now THEN 'deferred'
       WHEN readyAt < $staleBefore THEN 'missed'
       ELSE 'send'
     END AS fate
RETURN count(*) AS read, max(profileId) AS last, collect(CASE WHEN fate = 'send' THEN profileId END) AS eligible,
       count(CASE WHEN fate = 'deferred' THEN 1 END) AS deferred,
       count(CASE WHEN fate = 'missed' THEN 1 END) AS missed,
       min(CASE WHEN fate = 'deferred' THEN readyAt END) AS readyAt
