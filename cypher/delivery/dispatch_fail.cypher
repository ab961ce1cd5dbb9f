
MATCH (d:Dispatch {id: $dispatchId})
SET d.pageFailures = $failures, d.lastFailureAt = $now, d.status = 'failed', d.lastError = $reason,
    d.finishedAt = $now, d.lastProgressAt = $now
