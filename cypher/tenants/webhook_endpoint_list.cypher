// webhookEndpoints.list: a tenant's endpoints, oldest first, through webhook_endpoint_tenant; each with
// how many events wait for it (the unsent of its queued batches, seeking webhook_batch_queue). Never a
// secret.
MATCH (e:WebhookEndpoint)
WHERE e.tenantId = $tenantId AND e.createdAt > ''
CALL (e) {
  MATCH (b:WebhookBatch) WHERE b.endpointId = e.id AND b.queueKey > ''
  RETURN coalesce(sum(size([x IN b.sent WHERE NOT x])), 0) AS pending
}
RETURN e {.id, .url, .events, .description, .enabled, .disabledReason, .createdAt, .updatedAt,
          .failures, .failingSince, .retryAt, .lastStatus, .lastAttemptAt} AS endpoint, pending
ORDER BY e.createdAt, e.id
LIMIT 1000
