
CYPHER replan=skip
MATCH (d:Dispatch {id: $dispatchId})
SET d.casLock = coalesce(d.casLock, 0) + 1,
    d.emailed = coalesce(d.emailed, 0) + $emailed,
    d.rejected = coalesce(d.rejected, 0) + $rejected,
    d.uncertain = coalesce(d.uncertain, 0) + $uncertain,
    d.throttled = coalesce(d.throttled, 0) + $throttled,
    d.lastOutcomeAt = CASE WHEN $emailed + $rejected + $uncertain > 0 AND coalesce(d.lastOutcomeAt, '') < $now
                           THEN $now ELSE d.lastOutcomeAt END,
    d.lastError = coalesce($lastError, d.lastError)
WITH d
WHERE d.status = 'sending' AND coalesce(d.cursor, '') = $expected
SET d.cursor = $cursor, d.cursorMessageId = $messageId, d.pages = d.pages + 1,
    d.enqueued = d.enqueued + $enqueued, d.lastProgressAt = $now, d.nextPageAt = $nextPageAt,
    d.pageFailures = 0, d.emailDeferrals = null,
    d.waveDelayUsed = CASE WHEN $enqueued > 0 THEN $pause ELSE d.waveDelayUsed END,
    d.status = CASE WHEN $done THEN 'completed' ELSE d.status END,
    d.finishedAt = CASE WHEN $done THEN $now ELSE d.finishedAt END
RETURN d.id AS id
