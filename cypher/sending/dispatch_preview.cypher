// Reviewed-dispatch preview, one keyset page of campaign members after $cursor in profileId order: the
// seek and the order come from the relationship index audience_member (campaignId, profileId), as in
// dispatch_page, so a page costs the members it reads and the whole preview is one pass over the
// audience in bounded pages (never the whole audience in one record or one sort).
// One record per page: members read, the last one, how many were already notified, the notify
// recipients and the email recipients with their one address, and the members who see its in-app
// card (the campaign age policy, as getMyCampaigns; approval_publish.py pins and counts them), and each
// channel's recipients' time zones ('' = none: the forecast's quiet hours, campaigns/sending/plan.py). The email rule is the email claim's
// (email_page.cypher): opted in, adult by EMAIL_AGE_OK, one primary verified address, never claimed.
// Placeholders are filled by graph.policy (the one definition of every eligibility rule). The index
// hint keeps the seek on a young database whose statistics would otherwise favour a scan.
// replan=skip: the membership seek is pinned by its hint and the rest expands from bound nodes, so
// statistics cannot improve the plan; a dispatch's own sends move them fast enough that Neo4j otherwise
// replanned it (and JIT-compiled it again) between dispatches: a dispatch call of ~0.3 s took ~0.9 s.
// The AUDIENCE_PAGE placeholder: graph/rules/policy.py's static page, or with a live segment its seeks beside it in one
// ordered union (graph/rules/segment.py); either way `p` and `c` for at most $limit members in order.
// Every fact of a member (age, emails, opt-outs, locale) is the campaign tenant's view over the shared
// ones, as the walks read them (TENANT_VIEW binds `view` once per member; docs/people.md).
CYPHER replan=skip
{{AUDIENCE_PAGE}}
{{TENANT_VIEW}}
WITH p, c, view, EXISTS { (p)-[s:CAMPAIGN_STATE]->(c) WHERE s.notifiedAt IS NOT NULL } AS notified,
     CASE WHEN $email THEN {{PRIMARY_EMAILS}} ELSE [] END AS emails
WITH p, notified, emails, coalesce(view.locale, p.locale) AS locale, {{CAMPAIGN_AGE_OK}} AS visible,
     coalesce(view.timeZone, p.timeZone) AS zone,
     CASE WHEN $notify AND NOT notified THEN
       NOT {{PUSH_OPTED_OUT}} AND {{CAMPAIGN_AGE_OK}}
     ELSE false END AS notifyOk,
     CASE WHEN $email THEN
       NOT {{EMAIL_OPTED_OUT}}
       AND {{EMAIL_AGE_OK}}
       AND {{EMAIL_CONTACT_OK}}
       AND NOT EXISTS {
         (p)-[s:CAMPAIGN_STATE]->(c) WHERE s.emailClaimedAt IS NOT NULL OR s.emailedAt IS NOT NULL
       }
     ELSE false END AS emailOk
RETURN count(*) AS read,
       max(p.profileId) AS last,
       count(CASE WHEN notified THEN 1 END) AS notified,
       collect(CASE WHEN notifyOk THEN [p.profileId, locale] END) AS notifyRows,
       collect(CASE WHEN emailOk THEN [p.profileId, emails[0], locale] END) AS emailRows,
       collect(CASE WHEN visible THEN p.profileId END) AS visibleRows,
       collect(CASE WHEN notifyOk THEN coalesce(zone, '') END) AS notifyZones,
       collect(CASE WHEN emailOk THEN coalesce(zone, '') END) AS emailZones
