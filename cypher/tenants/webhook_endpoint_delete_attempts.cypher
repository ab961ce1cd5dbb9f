
MATCH (a:WebhookAttempt) WHERE a.endpointId = $id AND a.orderKey > ''
WITH a LIMIT 5000 DETACH DELETE a RETURN count(*) AS n
