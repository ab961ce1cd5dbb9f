// webhookEndpoints.deliveries: one endpoint's attempt rounds, newest first, keyset-paged on orderKey
// ("<at>|<roundId>") through webhook_attempt_order; $before is the key of the round the previous page
// ended in (that round is read again and its attempts before the cursor's index are kept). A round holds
// its attempts as parallel lists; a node written before rounds holds one attempt as scalars. occurredAts
// (each event's time, what a replay of it starts from) is absent from rounds written before it.
MATCH (a:WebhookAttempt)
WHERE a.endpointId = $endpointId AND a.orderKey <= $before
RETURN a.orderKey AS orderKey, a.at AS at, a.latencyMs AS latencyMs,
       coalesce(a.retryAt, a.nextRetryAt) AS retryAt,
       coalesce(a.eventIds, [a.eventId]) AS eventIds, coalesce(a.types, [a.type]) AS types,
       coalesce(a.statusCodes, [coalesce(a.statusCode, 0)]) AS statusCodes,
       coalesce(a.errors, [coalesce(a.error, '')]) AS errors, coalesce(a.occurredAts, []) AS occurredAts
ORDER BY a.endpointId DESC, a.orderKey DESC
LIMIT $limit
