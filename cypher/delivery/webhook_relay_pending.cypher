// The relay's next events for one endpoint, oldest first: its queued batches through
// webhook_batch_queue, ordered by both index keys (the first is fixed) so the seek's own order serves
// and no Top sorts the whole queue per round; of each batch at most $limit unsent events. The caller
// reads rows lazily and stops once it holds $limit events.
MATCH (b:WebhookBatch)
WHERE b.endpointId = $endpointId AND b.queueKey > ''
WITH b ORDER BY b.endpointId, b.queueKey LIMIT $limit
WITH b, [i IN range(0, size(b.sent) - 1) WHERE NOT b.sent[i]][..$limit] AS idx
RETURN b.queueKey AS batchKey, idx, [i IN idx | b.eventIds[i]] AS eventIds, [i IN idx | b.types[i]] AS types,
       [i IN idx | b.bodies[i]] AS bodies, [i IN idx | b.recipientKeys[i]] AS recipientKeys,
       [i IN idx | b.orderKeys[i]] AS orderKeys
