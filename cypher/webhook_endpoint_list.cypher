// webhookEndpoints.list: a tenant's endpoints, oldest first, through webhook_endpoint_tenant; each with
// how many events wait for it (seeking webhook_message_queue). Never a secret.
MATCH (e:WebhookEndpoint)
WHERE e.tenantId = $tenantId AND e.createdAt > ''
CALL (e) {
  MATCH (m:WebhookMessage) WHERE m.endpointId = e.id AND m.queueKey > ''
  RETURN count(m) AS pending
}
RETURN e {.id, .url, .events, .description, .enabled, .disabledReason, .createdAt, .updatedAt,
          .failures, .failingSince, .retryAt, .lastStatus, .lastAttemptAt} AS endpoint, pending
ORDER BY e.createdAt, e.id
LIMIT 1000
