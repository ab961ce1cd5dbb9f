// explainRecipient: the guardians of member $profileId and what the routing makes of each. Only the
// campaign tenant's (docs/people.md): per guardian the link that tenant recorded, else the shared one,
// and only guardians of that tenant; another tenant's links and consent are never named.
MATCH (c:Campaign {id: $campaignId})
MATCH (p:Profile)-[link:GUARDIAN_OF]->(child:Profile {profileId: $profileId})
WHERE (c.tenantId IS NULL OR c.tenantId IN coalesce(p.tenants, [])) AND {{LINK_OF_TENANT}}
{{TENANT_VIEW}}
RETURN p.profileId AS id, link.consent AS consent, {{MEMBER}} AS member, {{CAMPAIGN_AGE_OK}} AS eligible
ORDER BY id
