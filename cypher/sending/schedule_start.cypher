MATCH (c:Campaign {id: $campaignId})
SET c.revision = c.revision + 1
WITH c
CALL (c) {
  MATCH (old:Dispatch)-[:DISPATCH_OF]->(c)
  WHERE old.status IN ['sending', 'paused']
  SET old.status = 'stopped', old.lastError = 'superseded', old.finishedAt = $now
}
MATCH (d:Dispatch {scheduleId: $scheduleId, status: 'scheduled'})-[:DISPATCH_OF]->(c)
SET d.status = 'sending', d.startedAt = $now, d.lastProgressAt = $now
// A deadline's pace and forecast, judged as it fires (campaigns/sending/schedule_deadline.py).
SET d += coalesce($fields[d.channel], {})
RETURN d.id AS id, d.channel AS channel
ORDER BY channel DESC
