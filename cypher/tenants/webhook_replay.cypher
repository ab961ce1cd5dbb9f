// webhookEndpoints.replay: every event recorded for the endpoint since $since goes back in its queue,
// in order (the relay sends them again with their own webhook-id, so a receiver may drop what it
// holds). A batch's orderKey is its last event's, so seeking webhook_batch_time from $since finds every
// batch holding such an event; of a batch only events at or after $since are unmarked. Bounded per
// transaction, the caller repeats until fewer batches come back.
MATCH (b:WebhookBatch)
WHERE b.endpointId = $endpointId AND b.orderKey >= $since AND b.orderKey > $after
WITH b ORDER BY b.endpointId, b.orderKey LIMIT $limit
WITH b, [i IN range(0, size(b.sent) - 1) | b.sent[i] AND b.orderKeys[i] < $since] AS sent
WITH b, sent, size([i IN range(0, size(sent) - 1) WHERE b.sent[i] AND NOT sent[i]]) AS requeued
SET b.sent = sent, b.queueKey = b.orderKey, b.deliveredAt = null
RETURN count(b) AS n, sum(requeued) AS events, max(b.orderKey) AS last
