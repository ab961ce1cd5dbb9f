// The campaign whose email carried the link gets the opt-out counted on the person's state of it
// (getStats' unsubscribed, the recipients export's unsubscribedAt): only when the opt-out newly stops
// the campaign's tenant ($tenants, the tenants the opt-out stops, as its events go), and only on the
// incarnation the link was signed for, in the link's tenant. The first time is kept. `campaignId` is
// the id the tenant knows it by, for its recipient.unsubscribed event.
MATCH (p:Profile {profileId: $profileId})-[s:CAMPAIGN_STATE]->(c:Campaign {id: $campaignId})
WHERE c.createdAt = $createdAt AND c.tenantId = $tenantId AND c.tenantId IN $tenants
SET s.unsubscribedAt = coalesce(s.unsubscribedAt, $now)
RETURN c {.id, .createdAt, .tenantId} AS campaign, coalesce(c.ref, c.id) AS campaignId
