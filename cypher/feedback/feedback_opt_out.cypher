// A spam complaint opts the profiles out of announcement email (locked by the caller, ascending), the
// first opt-out time kept, as the one-click unsubscribe does.
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
WITH p, coalesce(p.announcementEmailOptOut, false) AS already
SET p.announcementEmailOptOut = true,
    p.announcementEmailOptOutAt = CASE WHEN already THEN p.announcementEmailOptOutAt ELSE $now END
RETURN count(p) AS optedOut
