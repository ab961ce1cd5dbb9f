// Of (profileId, campaignId) pairs, those whose campaign shows an in-app card and routes to the profile
// as a guardian ({{ROUTED_GUARDIAN}}, graph/rules/routing.py): a unique seek of each. Under an approval
// policy only through a child the approved revision is shown to (added before its approval), as the
// guardian's card is in my_campaigns' guardians: a guardian records on the card they see, nothing else.
UNWIND $pairs AS pair
MATCH (p:Profile {profileId: pair[0]})
MATCH (c:Campaign {id: pair[1]}) USING INDEX c:Campaign(id)
WHERE c.hasInAppMessage AND {{CARD_APPROVED}}
  AND EXISTS { (p)-[:GUARDIAN_OF {consent: 'granted'}]->(:Profile)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
               WHERE {{CARD_SHOWN_TO_MEMBER}} }
{{TENANT_VIEW}}
WITH p, c, view WHERE {{ROUTED_GUARDIAN}}
RETURN p.profileId AS profileId, c.id AS campaignId
