// Delete expired DID-auth challenges, used or not, through the did_challenge_expires index; bounded
// per call so one reap never holds many locks (did/challenges.py runs it as challenges are issued).
MATCH (c:DidChallenge)
WHERE c.expiresAt < $now
WITH c LIMIT $limit
DETACH DELETE c
RETURN count(*) AS reaped
