
MATCH (d:Dispatch {id: $dispatchId})
SET d.casLock = coalesce(d.casLock, 0) + 1
WITH d
WHERE d.status = 'sending' AND coalesce(d.cursor, '') = $cursor
RETURN coalesce(d.pageFailures, 0) AS failures
