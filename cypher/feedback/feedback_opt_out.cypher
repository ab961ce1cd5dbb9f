// A spam complaint no email of ours can be traced to (no provider message id of a send: no tenant known)
// opts the profiles out of every tenant's announcement email (locked by the caller, ascending), the
// first opt-out time kept, as the "from every organisation" unsubscribe does. A complaint about a
// tenant's email opts out of that tenant only (feedback_opt_out_tenant.cypher).
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
WITH p, coalesce(p.announcementEmailOptOut, false) AS already
SET p.announcementEmailOptOut = true,
    p.announcementEmailOptOutAt = CASE WHEN already THEN p.announcementEmailOptOutAt ELSE $now END
RETURN count(p) AS optedOut
