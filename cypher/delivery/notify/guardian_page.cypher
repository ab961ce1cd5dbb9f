// Routing to guardians on the notify walk (graph/rules/routing.py): the guardians this page
// of a `minors: "guardians"` campaign routes, read in the page's transaction right after
// dispatch_page.cypher and over the same page ($cursor, $limit, the same head). The members the
// campaign age policy excludes expand to their consenting guardians (ROUTE_NOTIFY: one GUARDIAN_OF
// expansion per excluded member, each guardian once, only from the page of their first routing child,
// never a member), and each guardian then passes what a member passes in dispatch_page: not opted out,
// an adult under the policy, not yet notified, ready (readiness as there). The links and every fact
// read are the campaign tenant's (ROUTE_NOTIFY binds each guardian's `view`). One record: the guardians to
// send to now with the children of this page routed to them, and what waits for a later pass.
{{AUDIENCE_PAGE}}
WITH c, collect(p) AS members
CALL (c, members) {
  {{ROUTE_NOTIFY}}
  OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
  WITH p.profileId AS profileId, via,
       coalesce($readyAt[coalesce(view.timeZone, p.timeZone)], $fallbackReadyAt) AS readyAt,
       (NOT {{PUSH_OPTED_OUT}} AND s.notifiedAt IS NULL AND {{CAMPAIGN_AGE_OK}})
         AS eligible
  WITH profileId, via, readyAt,
       CASE
         WHEN NOT eligible THEN 'skip'
         WHEN readyAt > $now THEN 'deferred'
         WHEN readyAt < $staleBefore THEN 'missed'
         ELSE 'send'
       END AS fate
  RETURN collect(CASE WHEN fate = 'send' THEN [profileId, via] END) AS routed,
         count(CASE WHEN fate = 'deferred' THEN 1 END) AS deferred,
         count(CASE WHEN fate = 'missed' THEN 1 END) AS missed,
         min(CASE WHEN fate = 'deferred' THEN readyAt END) AS readyAt
}
RETURN routed, deferred, missed, readyAt
