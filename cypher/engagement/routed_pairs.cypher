// Of (profileId, campaignId) pairs, those whose campaign shows an in-app card and routes to the profile
// as a guardian ({{ROUTED_GUARDIAN}}, graph/rules/routing.py): a unique seek of each. Under an approval
// policy only once a revision is approved (my_guardian_campaigns).
UNWIND $pairs AS pair
MATCH (p:Profile {profileId: pair[0]})
MATCH (c:Campaign {id: pair[1]}) USING INDEX c:Campaign(id)
WHERE c.hasInAppMessage AND {{CARD_APPROVED}}
{{TENANT_VIEW}}
WITH p, c, view WHERE {{ROUTED_GUARDIAN}}
RETURN p.profileId AS profileId, c.id AS campaignId
