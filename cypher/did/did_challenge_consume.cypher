// Use one DID-auth challenge (did/challenges.py). The first SET takes the node's write lock, so the
// WHERE after it reads the committed state: of two concurrent uses exactly one sees usedAt unset.
MATCH (c:DidChallenge {key: $key})
SET c.consumeLock = true
WITH c
WHERE c.usedAt IS NULL AND c.expiresAt > $now
SET c.usedAt = $now
RETURN count(c) AS used
