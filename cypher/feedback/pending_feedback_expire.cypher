// Forget feedback kept for a send never recorded (feedback_pending.cypher) once the dedup window is past:
// a send records within minutes of its provider's answer, so an older one names no send of ours.
// A range seek of pending_feedback_received, oldest first, a bounded batch per transaction.
MATCH (f:PendingFeedback)
WHERE f.receivedAt < $before
WITH f ORDER BY f.receivedAt LIMIT $limit
DELETE f
RETURN count(*) AS deleted
