
MATCH (d:Dispatch {id: $dispatchId})
SET d.casLock = coalesce(d.casLock, 0) + 1,
    d.emailed = coalesce(d.emailed, 0) + $emailed,
    d.rejected = coalesce(d.rejected, 0) + $rejected,
    d.uncertain = coalesce(d.uncertain, 0) + $uncertain,
    d.throttled = coalesce(d.throttled, 0) + $throttled,
    d.lastError = coalesce($lastError, d.lastError)
WITH d
WHERE d.status = 'sending' AND coalesce(d.cursor, '') = $expected
WITH d, coalesce(d.emailDeferrals, 0) + 1 AS deferrals
SET d.cursor = $cursor, d.cursorMessageId = $messageId, d.enqueued = d.enqueued + $enqueued,
    d.lastProgressAt = $now,
    d.nextPageAt = CASE WHEN deferrals >= $maxDeferrals THEN null ELSE $nextPageAt END,
    d.pageFailures = 0, d.emailDeferrals = deferrals,
    d.status = CASE WHEN deferrals >= $maxDeferrals THEN 'failed' ELSE d.status END,
    d.lastError = CASE WHEN deferrals >= $maxDeferrals THEN $failure ELSE d.lastError END,
    d.finishedAt = CASE WHEN deferrals >= $maxDeferrals THEN $now ELSE d.finishedAt END
RETURN deferrals, d.status = 'failed' AS failed
