
MATCH (b:RateBucket) WHERE b.expiresAt < $now
WITH b LIMIT $limit
DELETE b
