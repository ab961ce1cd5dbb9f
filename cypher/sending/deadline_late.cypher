// Once per Dispatch: the write lock is taken before lateAt is read, so of two transactions that both
// found it unmarked, the second waits for the first to commit, then reads its lateAt and marks nothing.
MATCH (d:Dispatch {id: $dispatchId})
SET d.lateLock = coalesce(d.lateLock, 0) + 1
WITH d
WHERE d.lateAt IS NULL
SET d.lateAt = $now, d.lateFinishAt = $finishesAt
RETURN d.channel AS channel
