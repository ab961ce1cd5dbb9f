// The forecast's measured rate (campaigns/sending/plan.py): per walked channel, the newest $scan
// Dispatches that finished, by the index dispatch_channel_finished (channel, finishedAt) read backwards,
// of which the completed ones that neither waited for quiet hours or local times (one pass, nothing
// deferred) nor ran a test wave; the caller keeps the newest few of enough recipients. A bounded read
// whatever the history: at most $scan Dispatches per channel.
UNWIND $channels AS channel
CALL {
  WITH channel
  MATCH (d:Dispatch)
  USING INDEX d:Dispatch(channel, finishedAt)
  WHERE d.channel = channel AND d.finishedAt > ''
  WITH d ORDER BY d.finishedAt DESC LIMIT $scan
  WITH d WHERE d.status = 'completed' AND coalesce(d.pass, 1) = 1 AND coalesce(d.deferred, 0) = 0
           AND d.experiment IS NULL AND d.startedAt IS NOT NULL
  RETURN collect({startedAt: d.startedAt, endedAt: coalesce(d.lastOutcomeAt, d.finishedAt), pages: d.pages,
                  waveDelay: d.waveDelaySeconds, used: d.waveDelayUsed,
                  sent: d.acknowledged + d.rejected + d.suppressed + coalesce(d.emailed, 0)
                        + coalesce(d.uncertain, 0) + coalesce(d.capped, 0)}) AS sends
}
RETURN channel, sends
