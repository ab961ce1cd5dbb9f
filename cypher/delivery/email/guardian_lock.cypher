// Routing to guardians on the email walk (graph/rules/routing.py), the first statement of a
// `minors: "guardians"` campaign's claim: the page (the same head, $cursor and $limit as the claim
// statement after it), the guardians it routes for email (ROUTE_EMAIL: members EMAIL_AGE_OK excludes
// expanded to their consenting guardians, each once, only from the page of their first routing child,
// never a member), then every profile lock of the page, members and guardians together, in ascending
// profileId order (§5): the member claim (email_page.cypher, whose own lock step then finds them held)
// and the guardian claim (email_page.cypher with graph/rules/routing.py:GUARDIAN_CLAIM_HEAD) check and claim
// under them. No record when the page is empty.
{{AUDIENCE_PAGE}}
WITH c, collect(p) AS members
CALL (c, members) {
  {{ROUTE_EMAIL}}
  RETURN collect([p, via]) AS routed
}
WITH members, routed
UNWIND members + [r IN routed | r[0]] AS p
WITH DISTINCT members, routed, p
ORDER BY p.profileId
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH routed, count(p) AS locked
RETURN [r IN routed | [r[0].profileId, r[1]]] AS routed, locked
