// webhookEndpoints.replay: every event queued for the endpoint since $since goes back in its queue, in
// order (the relay sends them again with their own webhook-id, so a receiver may drop what it holds).
// Seeks webhook_message_time; bounded per transaction, the caller repeats until fewer come back.
MATCH (m:WebhookMessage)
WHERE m.endpointId = $endpointId AND m.orderKey >= $since AND m.orderKey > $after AND m.queueKey IS NULL
WITH m ORDER BY m.endpointId, m.orderKey LIMIT $limit
SET m.queueKey = m.orderKey
RETURN count(m) AS n, max(m.orderKey) AS last
