// Event webhooks' outbox (graph/webhook_outbox.py): one :WebhookBatch per (subscribed endpoint,
// recording transaction) holding that transaction's events for it as parallel lists, created in the
// very transaction of the change, so an event exists exactly when its change committed. A page of a
// thousand recipients costs one node and two index entries per endpoint, not a thousand of each.
// orderKey is the batch's last event's key (all of one transaction's events share its instant);
// queueKey (= orderKey while any event is unsent, null once all are) is what the relay seeks, per
// endpoint, in order (index webhook_batch_queue); sent[i] says event i was delivered. No endpoint node
// is touched, so concurrent batches never queue on a lock of ours.
UNWIND $batches AS b
CREATE (:WebhookBatch {endpointId: b.endpointId, tenantId: $tenantId, orderKey: b.orderKey,
                       queueKey: b.orderKey, eventIds: b.eventIds, types: b.types, bodies: b.bodies,
                       orderKeys: b.orderKeys, recipientKeys: b.recipientKeys, sent: b.sent})
