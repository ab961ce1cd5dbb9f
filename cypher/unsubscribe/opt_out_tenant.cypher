// One tenant's link (docs/people.md): the opt-out goes on that tenant's view of the person, created if
// absent, under the profile lock; the first time kept. `already` when the person was opted out of the
// tenant's email either way (their view's or the deployment-wide choice): no second event. The event goes
// only to a tenant that holds the person.
MATCH (p:Profile {campaignUnsubscribeId: $unsubscribeId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p
MERGE (view:TenantView {tenantId: $tenantId, profileId: p.profileId})
MERGE (p)-[:HAS_VIEW]->(view)
WITH p, view, coalesce(view.announcementEmailOptOut, false) AS viewed
SET view.announcementEmailOptOut = true,
    view.announcementEmailOptOutAt = CASE WHEN viewed THEN view.announcementEmailOptOutAt ELSE $now END
RETURN viewed OR coalesce(p.announcementEmailOptOut, false) AS already, p.profileId AS profileId,
       [t IN coalesce(p.tenants, []) WHERE t = $tenantId] AS tenants
