
MATCH (d:Dispatch {id: $dispatchId})
SET d.pageFailures = $failures, d.lastFailureAt = $now
