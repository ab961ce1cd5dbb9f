// Issue DID-auth challenges (did/challenges.py): one node per nonce (keyed by the hash of DID and nonce),
// bound to the DID, with its expiry.
// Then the DID's outstanding challenges past the cap, oldest first, are retired (expired now, not
// deleted: a consume waiting on one of them must find it); the reaper deletes them with the rest.
UNWIND $keys AS key
CREATE (:DidChallenge {key: key, did: $did, issuedAt: $now, expiresAt: $expiresAt})
WITH count(*) AS issued
MATCH (c:DidChallenge {did: $did})
WHERE c.expiresAt > $now AND c.usedAt IS NULL
WITH c ORDER BY c.issuedAt DESC, c.key DESC
SKIP $cap
SET c.expiresAt = $now
RETURN count(c) AS retired
