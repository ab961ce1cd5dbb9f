// Event webhooks' retention (CAMPAIGN_EVENT_RETENTION_DAYS, graph/webhook_outbox.py): delivered batches
// (every event sent) and attempt rounds older than $before, per endpoint through webhook_batch_time and
// webhook_attempt_order (range seeks, oldest first), a bounded batch per endpoint per transaction (the
// sweeper loops). A batch with an event still queued is never deleted, however old: at least once
// outranks tidiness.
MATCH (e:WebhookEndpoint)
CALL (e) {
  MATCH (b:WebhookBatch)
  WHERE b.endpointId = e.id AND b.orderKey < $before AND b.queueKey IS NULL
  WITH b ORDER BY b.endpointId, b.orderKey LIMIT $limit
  WITH b, size(b.eventIds) AS events
  DELETE b
  RETURN count(*) AS batches, sum(events) AS events
}
CALL (e) {
  MATCH (a:WebhookAttempt)
  WHERE a.endpointId = e.id AND a.orderKey < $before
  WITH a ORDER BY a.endpointId, a.orderKey LIMIT $limit
  WITH a, size(coalesce(a.eventIds, [a.eventId])) AS attempts
  DELETE a
  RETURN count(*) AS rounds, sum(attempts) AS attempts
}
RETURN sum(events) AS events, sum(attempts) AS attempts, max(batches) AS most, max(rounds) AS mostAttempts
