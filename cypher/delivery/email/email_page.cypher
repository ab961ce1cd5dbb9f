// One email page, read AND claimed in one statement (docs/architecture.md "Email is at most one attempt").
// The members after $cursor come from the relationship index audience_member (campaignId, profileId),
// in order, LIMIT $limit: a page costs the members it reads, whatever the share of the audience in all
// profiles. Every member read moves the cursor (as in dispatch_page); ineligible ones are read and
// skipped, so a page of opted-out members still advances and no page is read forever.
// Each member's profile lock is taken in ascending profileId order BEFORE its rules and its claim state
// are read: two workers on one page claim each recipient once. Eligible members get emailClaimedAt plus
// this attempt's claimId (what the outcome record must match). A claimed profile still without a
// campaignUnsubscribeId (profiles get theirs at creation or from the schema backfill) comes back with a
// null one, and the caller allocates it in this transaction under the lock taken here
// (email_unsubscribe_ids.cypher): a subquery per row here cost ~10% of the statement for a case that
// does not occur in a backfilled graph. The caller checked the campaign guard in the same transaction.
// The primary addresses are read once per member (`emails`), and the contact predicates of
// graph/rules/policy.py read that binding. Every fact of a member is the campaign tenant's view of
// them over the shared ones (docs/people.md): `view` is bound once per member (TENANT_VIEW).
// CAMPAIGN_STATE is created, not MERGEd: MERGE's locking variant also locks the campaign node (see
// notify_record). The claim's subquery gives every row exactly one stateId (one branch of its union
// holds for each): the elementId of the CAMPAIGN_STATE the claim wrote, where email_record.cypher
// finds it again, or null when it claimed nothing. (An OPTIONAL CALL returning the created
// relationship was tried: on Neo4j 5.26 `s` then read as id -1 after it.) One record per page:
// members read, the last one, and [profileId, address, unsubscribeId, stateId] of each claim.
// The EMAIL_CAP placeholder is cypher/email_cap.cypher when CAMPAIGN_FREQUENCY_CAPS caps email for
// some tenant (delivery/frequency_cap.py:email_page_query), else nothing: its three subqueries cost
// ~8% of the statement even when $caps is null. The cap's verdict ('capped') stays here; with no cap
// it is never reached, so firstCapped is false and nothing is marked.
// Readiness ($readyAt, $fallbackReadyAt, $staleBefore; cypher/dispatch_page.cypher, delivery/readiness.py):
// a member not yet ready is read but not claimed, counted deferred with the earliest such instant; one
// ready before $staleBefore is missed, never claimed.
// replan=skip: a send moves the statistics fast enough that Neo4j would otherwise recompile this
// statement every few seconds (seconds each on a loaded machine); its plan is fixed by its index
// predicates (tests/integration/delivery/email/test_email_page_walk.py asserts it).
// The AUDIENCE_PAGE placeholder: graph/rules/policy.py's static page, or with a live segment its seeks beside it in one
// ordered union (graph/rules/segment.py); either way `p` and `c` for at most $limit members in order.
CYPHER replan=skip
{{AUDIENCE_PAGE}}
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p, c
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
{{TENANT_VIEW}}
WITH p, c, s, view, {{PRIMARY_EMAILS}} AS emails,
     CASE WHEN coalesce(c.priority, '') <> 'critical'  // critical skips the cap (domain/priority.py)
          THEN coalesce($caps[coalesce(c.tenantId, '*')], $caps['*']) END AS cap,
     coalesce($readyAt[coalesce(view.timeZone, p.timeZone)], $fallbackReadyAt) AS readyAt
WITH p, c, s, view, emails, cap, readyAt,
     CASE
       WHEN c.createdAt <> $campaignCreatedAt THEN 'campaign_gone'
       WHEN {{EMAIL_OPTED_OUT}} THEN 'opted_out'
       WHEN NOT {{EMAIL_AGE_OK}} THEN 'age_policy'
       WHEN {{EMAIL_SUPPRESSED}} THEN 'suppressed'
       WHEN NOT {{EMAIL_CONTACT_OK}} THEN 'no_email'
       WHEN s.emailClaimedAt IS NOT NULL OR s.emailedAt IS NOT NULL THEN 'already_claimed'
       WHEN readyAt > $now THEN 'deferred'
       WHEN readyAt < $staleBefore THEN 'missed'
       WHEN {{EMAIL_CAP_REACHED}} THEN 'capped'
       ELSE null
     END AS blocked
WITH *, blocked = 'capped' AND coalesce(s.emailCappedDispatchId, '') <> $dispatchId AS firstCapped
CALL (p, c, s, blocked) {
  WITH p, c, s, blocked
  WHERE blocked IS NULL AND s IS NULL
  CREATE (p)-[st:CAMPAIGN_STATE]->(c)
  SET st.emailClaimedAt = $now, st.emailClaimId = $claimId, st.emailDispatchId = $dispatchId,
      st.emailOutcome = 'claimed'
  RETURN elementId(st) AS stateId
  UNION ALL
  WITH s, blocked
  WHERE blocked IS NULL AND s IS NOT NULL
  SET s.emailClaimedAt = $now, s.emailClaimId = $claimId, s.emailDispatchId = $dispatchId,
      s.emailOutcome = 'claimed', s.emailOutcomeReason = null
  RETURN elementId(s) AS stateId
  UNION ALL
  WITH blocked
  WHERE blocked IS NOT NULL
  RETURN null AS stateId
}
{{EMAIL_CAP}}
WITH p.profileId AS profileId, blocked, emails[0] AS address, p.campaignUnsubscribeId AS unsubscribeId,
     stateId, firstCapped, coalesce(view.locale, p.locale) AS locale,
     CASE WHEN blocked = 'deferred' THEN readyAt END AS readyAt
RETURN count(*) AS read, max(profileId) AS last,
       collect(CASE WHEN blocked IS NULL THEN [profileId, address, unsubscribeId, stateId, locale] END) AS claimed,
       count(CASE WHEN firstCapped THEN 1 END) AS capped,
       count(CASE WHEN blocked = 'deferred' THEN 1 END) AS deferred,
       count(CASE WHEN blocked = 'missed' THEN 1 END) AS missed, min(readyAt) AS readyAt
