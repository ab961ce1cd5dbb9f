// One relay round's outcome, in one transaction, only while this relay holds the lease: the round's
// attempts (one :WebhookAttempt node holding the round's POSTs as parallel lists, as a :WebhookBatch holds
// events, so relaying adds one node and one index entry per round, not per event), the delivered events marked sent in their batches (a batch all sent leaves the
// queue), and the endpoint's failure state (failures in a row, when failing began, the next try;
// disabled once failing past the limit). $delivered is [{key: batch queueKey, idx: [event indexes]}];
// $endpoint is the new state; $release ends the lease; $attempts is null (nothing was POSTed) or the
// round {at, orderKey, latencyMs, retryAt, eventIds, types, statusCodes (0: no answer), errors ('': none)}.
MATCH (e:WebhookEndpoint {id: $endpointId})
WHERE e.leaseToken = $token
SET e += $endpoint,
    e.leaseUntil = CASE WHEN $release THEN null ELSE e.leaseUntil END
WITH e
CALL (e) {
  UNWIND $delivered AS d
  MATCH (b:WebhookBatch {endpointId: e.id, queueKey: d.key})
  WITH b, [i IN range(0, size(b.sent) - 1) | b.sent[i] OR i IN d.idx] AS sent
  WITH b, sent, all(x IN sent WHERE x) AS done
  SET b.sent = sent,
      b.queueKey = CASE WHEN done THEN null ELSE b.queueKey END,
      b.deliveredAt = CASE WHEN done THEN $now ELSE null END
}
CALL (e) {
  WITH e WHERE $attempts IS NOT NULL
  CREATE (a:WebhookAttempt {endpointId: e.id})
  SET a += $attempts
}
RETURN count(e) AS settled
