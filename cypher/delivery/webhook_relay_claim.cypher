// The relay's lease on one endpoint (delivery/webhook_relay.py): only an enabled endpoint, due (no retry
// pending, or its retryAt reached), whose lease is free; one relay at a time keeps its events in order.
// The lock write first, so two relays racing for it serialise here and the second sees the lease.
MATCH (e:WebhookEndpoint {id: $endpointId})
SET e.lock = coalesce(e.lock, 0) + 1
WITH e
WHERE e.enabled AND coalesce(e.retryAt, '') <= $now AND coalesce(e.leaseUntil, '') < $now
SET e.leaseUntil = $leaseUntil, e.leaseToken = $token
RETURN e.url AS url, e.keys AS keys, coalesce(e.failures, 0) AS failures, e.failingSince AS failingSince
