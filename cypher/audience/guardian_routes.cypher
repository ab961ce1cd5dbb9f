// explainRecipient: the guardians of member $profileId and what the routing makes of each.
MATCH (c:Campaign {id: $campaignId})
MATCH (p:Profile)-[link:GUARDIAN_OF]->(:Profile {profileId: $profileId})
RETURN p.profileId AS id, link.consent AS consent, {{MEMBER}} AS member,
       (c.tenantId IS NULL OR c.tenantId IN coalesce(p.tenants, [])) AND {{CAMPAIGN_AGE_OK}} AS eligible
ORDER BY id
