
MATCH (d:Dispatch {id: $dispatchId})
WITH d, d.status = 'paused' AS wasPaused,
     CASE WHEN d.status = 'paused' THEN 'paused: ' + d.pauseReason ELSE coalesce(d.lastError, 'failed') END
       AS past
SET d.status = 'sending', d.pageFailures = 0, d.emailDeferrals = null, d.nextPageAt = null,
    d.finishedAt = null,
    d.pastErrors = (coalesce(d.pastErrors, []) + [$failedAt + ' ' + past])[-20..],
    d.lastError = CASE WHEN wasPaused THEN d.lastError ELSE null END,
    d.lastProgressAt = $now, d.resumedAt = $now
FOREACH (_ IN CASE WHEN wasPaused THEN [1] ELSE [] END |
  SET d.guardSince = $now, d.guardBaseEmailed = coalesce(d.emailed, 0),
      d.guardBaseRejected = coalesce(d.rejected, 0), d.guardBaseHardBounces = coalesce(d.hardBounces, 0),
      d.guardBaseComplaints = coalesce(d.complaints, 0),
      d.guardBaseAcknowledged = coalesce(d.acknowledged, 0),
      d.pauseReason = null, d.pauseRate = null, d.pauseValue = null, d.pauseLimit = null,
      d.pauseSample = null, d.pausedAt = null)
RETURN d {.*, campaignId: $campaignId} AS dispatch
