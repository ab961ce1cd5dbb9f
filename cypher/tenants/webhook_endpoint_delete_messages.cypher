
MATCH (b:WebhookBatch) WHERE b.endpointId = $id AND b.orderKey > ''
WITH b LIMIT 1000 DETACH DELETE b RETURN count(*) AS n
