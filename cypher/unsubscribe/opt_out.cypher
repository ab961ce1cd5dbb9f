// "From every organisation" (and every version-2 link): the person's deployment-wide opt-out, under the
// profile lock; the first time kept. The tenants come back that had not already been left (their view's
// own opt-out), for their recipient.unsubscribed events.
MATCH (p:Profile {campaignUnsubscribeId: $unsubscribeId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p, coalesce(p.announcementEmailOptOut, false) AS already
SET p.announcementEmailOptOut = true,
    p.announcementEmailOptOutAt = CASE WHEN already THEN p.announcementEmailOptOutAt ELSE $now END
RETURN already, p.profileId AS profileId,
       [t IN coalesce(p.tenants, []) WHERE NOT EXISTS {
          MATCH (p)-[:HAS_VIEW]->(v:TenantView {tenantId: t}) WHERE v.announcementEmailOptOut = true
        }] AS tenants
