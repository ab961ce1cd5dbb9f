
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
RETURN newEmail AS email, newPush AS push
