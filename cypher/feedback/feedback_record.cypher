// Webhook idempotency: one FeedbackRecord per provider record identity (unique key). MERGE on the unique
// key takes its lock, so two deliveries of one record at once apply once; `attempt` (drawn before the
// transaction) tells this attempt's creation, also after a driver retry, from an earlier delivery's.
MERGE (r:FeedbackRecord {key: $key})
  ON CREATE SET r.receivedAt = $now, r.source = $source, r.attempt = $attempt
RETURN r.attempt = $attempt AS fresh
