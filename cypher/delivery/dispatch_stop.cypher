
MATCH (d:Dispatch {id: $dispatchId})
SET d.casLock = coalesce(d.casLock, 0) + 1
WITH d
WHERE d.status = 'sending' AND coalesce(d.cursor, '') = $cursor
SET d.status = $status, d.lastError = $reason, d.finishedAt = $now, d.lastProgressAt = $now
RETURN d.id AS id
