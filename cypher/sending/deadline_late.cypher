// Once per Dispatch: only one not yet marked late is marked.
MATCH (d:Dispatch {id: $dispatchId})
WHERE d.lateAt IS NULL
SET d.lateAt = $now, d.lateFinishAt = $finishesAt
RETURN d.channel AS channel
