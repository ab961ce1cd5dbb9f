// getMyCampaigns' cards for routed guardians: each caller's live, in-window in-app
// campaigns that route minors to their guardians and hold a child of the caller, linked with consent
// granted, as a static member the campaign age policy excludes; the caller an adult of its tenant and no
// member ({{ROUTED_GUARDIAN}}, graph/rules/routing.py, the one rule, over the caller's view in the
// campaign's tenant and that tenant's links only). One unique seek per caller and the expansion of
// their GUARDIAN_OF links, which most callers have none of. The approved revision as in my_campaigns.
// Each card in the language of the caller's view in the campaign's tenant over the shared locale.
// replan=skip: an app call's plan seeks unique keys, which no statistic improves, and a replan under
// load stalls the process's calls behind its compile (test_hot_plans.py).
CYPHER replan=skip
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
RETURN profileId,
       collect([c.id, coalesce(c.shownVersion, c.updatedAt), s {.*}, coalesce(view.locale, p.locale)]) AS visible
