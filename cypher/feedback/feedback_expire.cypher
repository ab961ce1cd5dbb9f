// Forget webhook record identities older than the dedup window (CAMPAIGN_FEEDBACK_DEDUP_DAYS): a
// provider's retry comes within hours, so an older FeedbackRecord only takes space. A range seek of
// feedback_record_received, oldest first, a bounded batch per transaction (the sweeper loops).
MATCH (r:FeedbackRecord)
WHERE r.receivedAt < $before
WITH r ORDER BY r.receivedAt LIMIT $limit
DELETE r
RETURN count(*) AS deleted
