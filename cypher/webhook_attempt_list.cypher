// webhookEndpoints.deliveries: every attempt to one endpoint, newest first, keyset-paged on orderKey
// ("<at>|<attemptId>") through webhook_attempt_order; $before is the previous page's last key.
MATCH (a:WebhookAttempt)
WHERE a.endpointId = $endpointId AND a.orderKey < $before
RETURN a {.eventId, .type, .at, .statusCode, .latencyMs, .error, .nextRetryAt, .orderKey} AS attempt
ORDER BY a.endpointId DESC, a.orderKey DESC
LIMIT $limit
