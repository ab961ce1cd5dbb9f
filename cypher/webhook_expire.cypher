// Event webhooks' retention (CAMPAIGN_EVENT_RETENTION_DAYS, graph/webhook_outbox.py): delivered events
// and attempts older than $before, per endpoint through webhook_message_time and webhook_attempt_order
// (range seeks, oldest first), a bounded batch per endpoint per transaction (the sweeper loops). An
// event still queued (queueKey set) is never deleted, however old: at least once outranks tidiness.
MATCH (e:WebhookEndpoint)
CALL (e) {
  MATCH (m:WebhookMessage)
  WHERE m.endpointId = e.id AND m.orderKey < $before AND m.queueKey IS NULL
  WITH m ORDER BY m.endpointId, m.orderKey LIMIT $limit
  DELETE m
  RETURN count(*) AS messages
}
CALL (e) {
  MATCH (a:WebhookAttempt)
  WHERE a.endpointId = e.id AND a.orderKey < $before
  WITH a ORDER BY a.endpointId, a.orderKey LIMIT $limit
  DELETE a
  RETURN count(*) AS attempts
}
RETURN sum(messages) AS messages, sum(attempts) AS attempts, max(messages) AS most, max(attempts) AS mostAttempts
