
MATCH (e:WebhookEndpoint {id: $id})
DETACH DELETE e
