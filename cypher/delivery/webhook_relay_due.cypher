
MATCH (e:WebhookEndpoint)
WHERE e.enabled AND coalesce(e.retryAt, '') <= $now AND coalesce(e.leaseUntil, '') < $now
  AND EXISTS { MATCH (b:WebhookBatch) WHERE b.endpointId = e.id AND b.queueKey > '' }
RETURN e.id AS id
ORDER BY e.id
