// One tenant's choices (the caller is checked to be one of its members first): on that tenant's view of
// the person, created if absent, under the profile lock; a null choice leaves the stored value and time.
// Returns the opt-outs as that tenant honours them (its view's or the deployment-wide choice).
MATCH (p:Profile {profileId: $profileId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p
MERGE (view:TenantView {tenantId: $tenantId, profileId: p.profileId})
MERGE (p)-[:HAS_VIEW]->(view)
WITH p, view, coalesce(view.announcementEmailOptOut, false) AS email,
     coalesce(view.announcementPushOptOut, false) AS push
WITH p, view, email, push, coalesce($email, email) AS newEmail, coalesce($push, push) AS newPush
SET view.announcementEmailOptOut = newEmail,
    view.announcementEmailOptOutAt = CASE
      WHEN NOT newEmail THEN null WHEN email THEN view.announcementEmailOptOutAt ELSE $now END,
    view.announcementPushOptOut = newPush,
    view.announcementPushOptOutAt = CASE
      WHEN NOT newPush THEN null WHEN push THEN view.announcementPushOptOutAt ELSE $now END
RETURN {{EMAIL_OPTED_OUT}} AS email, {{PUSH_OPTED_OUT}} AS push
