
MATCH (d:Dispatch {scheduleId: $scheduleId, status: 'scheduled'})
SET d.status = $status, d.lastError = $reason, d.finishedAt = $now, d.lastProgressAt = $now
RETURN count(d) AS changed
