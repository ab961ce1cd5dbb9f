// getMyCampaigns for many callers at once (concurrent calls share one read), in one round trip: four
// independent parts, each run once for the whole batch, each returning one row. A round trip costs the
// API about half a millisecond of driver CPU and Neo4j about as much, more than most parts' own work,
// so a batch pays one instead of four.
// replan=skip: an app call's plan seeks unique keys, which no statistic improves, and a replan under
// load stalls the process's calls behind its compile (test_hot_plans.py).
CYPHER replan=skip
// members: each caller's live, in-window in-app campaigns where the caller is a member and passes the
// campaign age policy now, with the caller's own engagement state. Each caller starts at one profile
// (unique seek) and expands its memberships, so cost grows with those memberships only. Cards (name,
// message) are cached by the caller keyed on (id, version), so the definition is not read here. Under a
// tenant's approval policy a campaign carries its approved revision (`shownVersion`, '' while none
// approved; campaigns/sending/approval_publish.py): the card is that revision's, shown to members added
// before its approval (`shownSince`) or enrolled by themselves. Each card's language is the campaign
// tenant's view of the caller over the shared locale (docs/people.md): a property of the view the age
// policy already bound, so it costs nothing more. One entry per caller, not per membership.
CALL {
  UNWIND $profileIds AS profileId
  MATCH (p:Profile {profileId: profileId})-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign)
  USING INDEX p:Profile(profileId)
  WHERE c.status = 'live' AND c.hasInAppMessage
    AND {{CARD_SHOWN_TO_MEMBER}}
    AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
  {{TENANT_VIEW}}
  WITH profileId, p, c, view WHERE {{CAMPAIGN_AGE_OK}}
  OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
  WITH profileId, collect([c.id, coalesce(c.shownVersion, c.updatedAt), s {.*}, c.abTest,
                           coalesce(view.locale, p.locale)]) AS visible
  RETURN collect([profileId, visible]) AS members
}
// guardians: the cards of routed guardians, each caller's live, in-window in-app campaigns that route
// minors to their guardians and hold a child of the caller, linked with consent granted, as a static
// member the campaign age policy excludes; the caller an adult of its tenant and no member
// (ROUTED_GUARDIAN, graph/rules/routing.py, the one rule, over the caller's view in the campaign's
// tenant and that tenant's links only). One unique seek per caller and the expansion of their
// GUARDIAN_OF links, which most callers have none of. Approved revision and language as above.
CALL {
  UNWIND $profileIds AS profileId
  MATCH (p:Profile {profileId: profileId})
  UNWIND [(p)-[:GUARDIAN_OF {consent: 'granted'}]->(child:Profile) | child] AS child
  MATCH (child)-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign)
  WHERE c.minors = 'guardians' AND c.status = 'live' AND c.hasInAppMessage
    AND {{CARD_SHOWN_TO_MEMBER}}
    AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
    AND NOT EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) }
  WITH DISTINCT profileId, p, c
  {{TENANT_VIEW}}
  WITH profileId, p, c, view WHERE {{ROUTED_GUARDIAN}}
  OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
  WITH profileId, collect([c.id, coalesce(c.shownVersion, c.updatedAt), s {.*},
                           coalesce(view.locale, p.locale)]) AS visible
  RETURN collect([profileId, visible]) AS guardians
}
// tests: each caller's pending self-test snapshots, newest first, with the campaign's tenant and the
// roles granted to the caller there (campaigns/engagement/own_tests.py checks them with the caller's
// signed claims). Only CAMPAIGN_TEST edges are expanded, which nobody but a test's sender holds, so a
// reader without tests costs a seek.
CALL {
  UNWIND $profileIds AS profileId
  MATCH (me:Profile {profileId: profileId})-[t:CAMPAIGN_TEST]->(c:Campaign) USING INDEX me:Profile(profileId)
  OPTIONAL MATCH (g:AccessGrant {tenantId: c.tenantId, subject: profileId}) WHERE g.role IS NOT NULL
  WITH profileId, c, t, collect(g.role) AS granted
  ORDER BY t.createdAt DESC
  RETURN collect({profileId: profileId, campaignId: c.id, tenantId: c.tenantId, granted: granted,
                  testId: t.testId, snapshot: t.snapshot, createdAt: t.createdAt}) AS tests
}
// segmentCampaigns: the live, in-window in-app campaigns with a live segment in the callers' tenants,
// whose rules the caller evaluates for them (segment_reach.py). One unique seek per caller, then the
// campaign_status_segment seek of the live campaigns with a segment, filtered. Under an approval policy
// the rule is the approved revision's (`shown*`), none while unapproved.
CALL {
  UNWIND $profileIds AS profileId
  MATCH (p:Profile {profileId: profileId})
  UNWIND coalesce(p.tenants, []) AS tenantId
  WITH collect(DISTINCT tenantId) AS tenants
  MATCH (c:Campaign) USING INDEX c:Campaign(status, hasSegment)
  WHERE c.status = 'live' AND c.hasSegment = true AND c.hasInAppMessage AND c.tenantId IN tenants
    AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
    AND {{CARD_APPROVED}}
  RETURN collect(c {.id, .ref, .tenantId, .abTest, updatedAt: coalesce(c.shownVersion, c.updatedAt),
                    definition: {{SHOWN_DEFINITION}}}) AS segmentCampaigns
}
RETURN members, guardians, tests, segmentCampaigns
