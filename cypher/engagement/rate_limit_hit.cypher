
// replan=skip: an app call's plan seeks unique keys, which no statistic improves, and a replan under
// load stalls the process's calls behind its compile (test_hot_plans.py).
CYPHER replan=skip
UNWIND $buckets AS bucket
MERGE (b:RateBucket {key: bucket.key})
  ON CREATE SET b.count = 0, b.expiresAt = $expiresAt
SET b.count = b.count + bucket.hits
RETURN bucket.key AS key, b.count AS count
