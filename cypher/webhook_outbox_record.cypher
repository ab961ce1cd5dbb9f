// Event webhooks' outbox (graph/webhook_outbox.py): one message per (subscribed endpoint, event), created
// in the very transaction of the change it reports, so an event exists exactly when its change committed.
// queueKey (= orderKey while undelivered, null once delivered) is what the relay seeks, per endpoint, in
// order (index webhook_message_queue). One UNWIND per transaction, never a statement per recipient; no
// endpoint node is touched, so concurrent batches never queue on a lock of ours.
UNWIND $messages AS m
CREATE (:WebhookMessage {endpointId: m.endpointId, eventId: m.eventId, tenantId: $tenantId, type: m.type,
                         occurredAt: m.occurredAt, body: m.body, orderKey: m.orderKey, queueKey: m.orderKey,
                         recipientKey: m.recipientKey, attempts: 0})
