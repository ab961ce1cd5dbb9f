// One relay round's outcome, in one transaction, only while this relay holds the lease: the attempts
// (one per POST), the delivered events out of the queue, and the endpoint's failure state (failures in a
// row, when failing began, the next try; disabled once failing past the limit). $endpoint is the new
// state; $release ends the lease.
MATCH (e:WebhookEndpoint {id: $endpointId})
WHERE e.leaseToken = $token
SET e += $endpoint,
    e.leaseUntil = CASE WHEN $release THEN null ELSE e.leaseUntil END
WITH e
CALL (e) {
  UNWIND $delivered AS key
  MATCH (m:WebhookMessage {endpointId: e.id, queueKey: key})
  SET m.queueKey = null, m.deliveredAt = $now, m.attempts = m.attempts + 1
}
CALL (e) {
  UNWIND $attempts AS a
  CREATE (:WebhookAttempt {endpointId: e.id, eventId: a.eventId, type: a.type, at: a.at, orderKey: a.orderKey,
                           statusCode: a.statusCode, latencyMs: a.latencyMs, error: a.error,
                           nextRetryAt: a.nextRetryAt})
}
RETURN count(e) AS settled
