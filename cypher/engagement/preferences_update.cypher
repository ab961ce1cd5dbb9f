// Every tenant at once: the deployment-wide choices (a null choice leaves the stored value and its time).
// Turning a channel back on turns it on for every tenant: the views' own opt-outs of it go too.
MATCH (p:Profile {profileId: $profileId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p, coalesce(p.announcementEmailOptOut, false) AS email, coalesce(p.announcementPushOptOut, false) AS push
WITH p, email, push, coalesce($email, email) AS newEmail, coalesce($push, push) AS newPush
SET p.announcementEmailOptOut = newEmail,
    p.announcementEmailOptOutAt = CASE
      WHEN NOT newEmail THEN null WHEN email THEN p.announcementEmailOptOutAt ELSE $now END,
    p.announcementPushOptOut = newPush,
    p.announcementPushOptOutAt = CASE
      WHEN NOT newPush THEN null WHEN push THEN p.announcementPushOptOutAt ELSE $now END
WITH p, newEmail, newPush, $email = false AS emailOn, $push = false AS pushOn
CALL (p, emailOn, pushOn) {
  MATCH (p)-[:HAS_VIEW]->(v:TenantView)
  WHERE coalesce(emailOn, false) OR coalesce(pushOn, false)
  SET v.announcementEmailOptOut = CASE WHEN emailOn THEN null ELSE v.announcementEmailOptOut END,
      v.announcementEmailOptOutAt = CASE WHEN emailOn THEN null ELSE v.announcementEmailOptOutAt END,
      v.announcementPushOptOut = CASE WHEN pushOn THEN null ELSE v.announcementPushOptOut END,
      v.announcementPushOptOutAt = CASE WHEN pushOn THEN null ELSE v.announcementPushOptOutAt END
  RETURN count(v) AS views
}
RETURN newEmail AS email, newPush AS push
