// The webhook outbox's first release queued one :WebhookMessage per event; the outbox now holds :WebhookBatch
// nodes (graph/webhook_outbox.py). Each message left becomes a batch of one, queued or sent as it was.
MATCH (m:WebhookMessage)
WITH m LIMIT 10000
CREATE (:WebhookBatch {endpointId: m.endpointId, tenantId: m.tenantId, orderKey: m.orderKey,
                       queueKey: m.queueKey, eventIds: [m.eventId], types: [m.type], bodies: [m.body],
                       orderKeys: [m.orderKey], recipientKeys: [m.recipientKey],
                       sent: [m.queueKey IS NULL], deliveredAt: m.deliveredAt})
DELETE m
RETURN count(*) AS n
