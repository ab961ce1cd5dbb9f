
UNWIND $buckets AS bucket
MERGE (b:RateBucket {key: bucket.key})
  ON CREATE SET b.count = 0, b.expiresAt = $expiresAt
SET b.count = b.count + bucket.hits
RETURN bucket.key AS key, b.count AS count
