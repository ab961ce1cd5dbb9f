// Routing to guardians in the dispatch preview (graph/rules/routing.py): for one preview page
// (dispatch_preview.cypher's $cursor and $limit, the same head), the guardians it routes on each channel
// and whether each passes that channel's rules, as the walks decide them (guardian_page.cypher for
// notify; the email claim's rules for email: opted in, an adult by EMAIL_AGE_OK, one primary verified
// unsuppressed address, never claimed). Each guardian is reported by the page of their first routing
// child only, so the preview counts them once whatever its page size. One record, nothing for an empty
// page: [profileId, locale, children routed to them] per notify guardian, [profileId, address, locale,
// children] per email guardian. Links and facts are the campaign tenant's: ROUTE_* bind each
// guardian's `view` (graph/rules/routing.py).
{{AUDIENCE_PAGE}}
WITH c, collect(p) AS members
CALL (c, members) {
  WITH c, members WHERE $notify
  {{ROUTE_NOTIFY}}
  WHERE NOT EXISTS { (p)-[s:CAMPAIGN_STATE]->(c) WHERE s.notifiedAt IS NOT NULL }
    AND NOT {{PUSH_OPTED_OUT}} AND {{CAMPAIGN_AGE_OK}}
  RETURN collect([p.profileId, coalesce(view.locale, p.locale), via]) AS notifyRows
}
CALL (c, members) {
  WITH c, members WHERE $email
  {{ROUTE_EMAIL}}
  WITH p, c, view, via, {{PRIMARY_EMAILS}} AS emails
  WHERE NOT {{EMAIL_OPTED_OUT}}
    AND {{EMAIL_AGE_OK}}
    AND {{EMAIL_CONTACT_OK}}
    AND NOT EXISTS {
      (p)-[s:CAMPAIGN_STATE]->(c) WHERE s.emailClaimedAt IS NOT NULL OR s.emailedAt IS NOT NULL
    }
  RETURN collect([p.profileId, emails[0], coalesce(view.locale, p.locale), via]) AS emailRows
}
RETURN notifyRows, emailRows
