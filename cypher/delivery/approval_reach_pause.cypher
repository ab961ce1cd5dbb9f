// A walk about to send past the reach its approval showed pauses before that page
// (delivery/approval_reach.py); only the holder of the cursor pauses, as for the health guard.
MATCH (d:Dispatch {id: $dispatchId})
SET d.casLock = coalesce(d.casLock, 0) + 1
WITH d
WHERE d.status = 'sending' AND coalesce(d.cursor, '') = $cursor
SET d.status = 'paused', d.pausedAt = $now, d.lastProgressAt = $now, d.nextPageAt = null,
    d.pauseReason = $message, d.pauseCode = 'approval_exceeded', d.pauseApproved = $approved,
    d.pauseReach = $reach
RETURN d.id AS id
