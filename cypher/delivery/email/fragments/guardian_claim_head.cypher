// The email claim's head for routed guardians (delivery/email/page_tx.py): each guardian the page
// routed, claimed only while a link the campaign's tenant reads for the pair (its own, else the shared
// one; graph/rules/routing.py:link_of_tenant) still grants consent for a child routed to them.
UNWIND $routed AS routed
MATCH (p:Profile {profileId: routed[0]})
MATCH (c:Campaign {id: $campaignId})
WHERE EXISTS {
  MATCH (p)-[link:GUARDIAN_OF {consent: 'granted'}]->(child:Profile)
  WHERE child.profileId IN routed[1]
    AND (link.tenantId = c.tenantId
         OR (link.tenantId IS NULL AND NOT EXISTS {
               (p)-[own:GUARDIAN_OF]->(child) WHERE own.tenantId = c.tenantId }))
}
WITH p, c