// explainRecipient: the members $profileId is a consenting guardian of ({{MEMBER}}: static or by the
// live segment), by the links the campaign's tenant reads (its own, else the shared one), and on which
// channel each is excluded (the child's age read from their view in that tenant).
MATCH (c:Campaign {id: $campaignId})
MATCH (g:Profile {profileId: $profileId})-[link:GUARDIAN_OF {consent: 'granted'}]->(p:Profile)
WHERE {{LINK_OF_TENANT}} AND {{MEMBER}}
{{TENANT_VIEW}}
RETURN p.profileId AS id, NOT {{CAMPAIGN_AGE_OK}} AS notify, NOT {{EMAIL_AGE_OK}} AS email
ORDER BY id
