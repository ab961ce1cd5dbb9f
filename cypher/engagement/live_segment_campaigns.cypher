// The live, in-window in-app campaigns with a live segment in the tenants of the given
// profiles: the campaigns whose cards getMyCampaigns must evaluate a rule for. One unique seek per
// profile, then the campaign_status_segment seek of the live campaigns with a segment, filtered. Under an
// approval policy the rule is the approved revision's (`shown*`, as in my_campaigns), none while unapproved.
// replan=skip: an app call's plan seeks unique keys, which no statistic improves, and a replan under
// load stalls the process's calls behind its compile (test_hot_plans.py).
CYPHER replan=skip
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
UNWIND coalesce(p.tenants, []) AS tenantId
WITH collect(DISTINCT tenantId) AS tenants
MATCH (c:Campaign) USING INDEX c:Campaign(status, hasSegment)
WHERE c.status = 'live' AND c.hasSegment = true AND c.hasInAppMessage AND c.tenantId IN tenants
  AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
  AND {{CARD_APPROVED}}
RETURN c {.id, .ref, .tenantId, .abTest, updatedAt: coalesce(c.shownVersion, c.updatedAt),
          definition: {{SHOWN_DEFINITION}}} AS campaign
