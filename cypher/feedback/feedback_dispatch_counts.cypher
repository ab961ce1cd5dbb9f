// The health guard's counters (domain/dispatch_health.py): each send bounced or complained
// about for the first time counts once on the Dispatch that emailed it, in the feedback's transaction
// (after the profile locks: the order is profiles -> Dispatch). A send accepted before the Dispatch's
// last resume (`guardSince`) belongs to the window the admin already judged, so it moves the window's
// base too and the guard does not count it again. Rows one per send; a Dispatch seek each.
UNWIND $rows AS row
MATCH (d:Dispatch {id: row.dispatchId})
WITH d, row, d.guardSince IS NOT NULL AND coalesce(row.emailedAt, '') < d.guardSince AS judged,
     CASE WHEN row.bounce THEN 1 ELSE 0 END AS bounce, CASE WHEN row.complaint THEN 1 ELSE 0 END AS complaint
SET d.hardBounces = coalesce(d.hardBounces, 0) + bounce,
    d.complaints = coalesce(d.complaints, 0) + complaint,
    d.guardBaseHardBounces = coalesce(d.guardBaseHardBounces, 0) + CASE WHEN judged THEN bounce ELSE 0 END,
    d.guardBaseComplaints = coalesce(d.guardBaseComplaints, 0) + CASE WHEN judged THEN complaint ELSE 0 END
RETURN count(*) AS counted
