
MATCH (d:Dispatch {id: $dispatchId})
SET d.casLock = coalesce(d.casLock, 0) + 1
WITH d
WHERE d.status = 'sending' AND coalesce(d.cursor, '') = $expected
WITH d, $expected = '' AS fresh
WITH d, CASE WHEN fresh THEN 0 ELSE coalesce(d.deferred, 0) END + $deferred AS deferred,
     CASE WHEN fresh THEN 0 ELSE coalesce(d.missed, 0) END + $missed AS missed,
     [t IN [CASE WHEN fresh THEN null ELSE d.passReadyAt END, $readyAt] WHERE t IS NOT NULL] AS times
WITH d, deferred, missed, reduce(m = null, t IN times | CASE WHEN m IS NULL OR t < m THEN t ELSE m END) AS at
SET d.deferred = deferred, d.missed = missed, d.passReadyAt = at,
    d.passStartedAt = CASE WHEN $expected = '' THEN $now ELSE d.passStartedAt END
RETURN deferred, at
