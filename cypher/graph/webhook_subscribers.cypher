// Every enabled event-webhook endpoint with its tenant and subscribed types: the outbox's per-process
// view (graph/webhook_outbox.py) loads this every few seconds. Endpoints are few (an admin makes each).
MATCH (e:WebhookEndpoint)
WHERE e.enabled
RETURN e.id AS id, e.tenantId AS tenantId, e.events AS events
ORDER BY e.id
