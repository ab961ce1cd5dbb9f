
MATCH (d:Dispatch {id: $dispatchId})
SET d.casLock = coalesce(d.casLock, 0) + 1
WITH d
WHERE d.status = 'sending' AND coalesce(d.cursor, '') = $cursor
SET d.status = 'paused', d.pausedAt = $now, d.lastProgressAt = $now, d.nextPageAt = null,
    d.pauseReason = $message, d.pauseRate = $rate, d.pauseValue = $value, d.pauseLimit = $limit,
    d.pauseSample = $sample
RETURN d.id AS id
