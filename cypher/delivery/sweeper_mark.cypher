
MATCH (d:Dispatch {id: $dispatchId})
SET d.casLock = coalesce(d.casLock, 0) + 1
WITH d
WHERE d.status = 'sending' AND coalesce(d.cursor, '') = $cursor
SET d.rearmedAt = $now, d.nextPageAt = null, d.pageFailures = coalesce(d.pageFailures, 0) + $failed
