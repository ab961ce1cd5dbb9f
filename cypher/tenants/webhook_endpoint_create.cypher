
CREATE (e:WebhookEndpoint {id: $id, tenantId: $tenantId, url: $url, events: $events,
        description: $description, keys: $keys, enabled: true, createdAt: $now, updatedAt: $now,
        failures: 0})
