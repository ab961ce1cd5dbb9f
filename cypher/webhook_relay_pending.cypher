// The relay's next events for one endpoint, oldest first, through webhook_message_queue. Ordered by
// both index keys (the first is fixed): the seek's own order, so no Top sorts the whole queue per round.
MATCH (m:WebhookMessage)
WHERE m.endpointId = $endpointId AND m.queueKey > ''
RETURN m.eventId AS eventId, m.type AS type, m.body AS body, m.queueKey AS queueKey,
       m.recipientKey AS recipientKey
ORDER BY m.endpointId, m.queueKey
LIMIT $limit
