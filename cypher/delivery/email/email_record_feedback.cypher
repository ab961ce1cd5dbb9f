// In the record's transaction, after email_record wrote the provider message ids under the profile
// locks: feedback that arrived before this send was recorded (feedback_pending.cypher) is marked on the
// send now, first time kept as in feedback_link, and every node kept for these messages (each id
// form) goes.
// The feedback's transaction locks the profiles of the address first, so either it saw this send or this
// read sees its nodes: counted once. The count store answers "none pending" without a seek per row.
MATCH (any:PendingFeedback)
WITH count(any) AS pending
WHERE pending > 0
UNWIND $messageIds AS messageId
MATCH (f:PendingFeedback {messageId: messageId})
MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(c:Campaign)
WHERE s.emailProviderMessageId = messageId
WITH p, s, c, reduce(acc = [], kept IN collect(f.forms) | acc + kept) AS forms,
     any(x IN collect(f.bounced) WHERE x) AS bounced, any(x IN collect(f.complained) WHERE x) AS complained
WITH p, s, c, forms, bounced AND s.bouncedAt IS NULL AS bounce, complained AND s.complainedAt IS NULL AS complaint
SET s.bouncedAt = CASE WHEN bounce THEN $now ELSE s.bouncedAt END,
    s.complainedAt = CASE WHEN complaint THEN $now ELSE s.complainedAt END
WITH p, s, c, forms, bounce, complaint
CALL (forms) {
  UNWIND forms AS form
  WITH DISTINCT form
  MATCH (g:PendingFeedback {messageId: form})
  DELETE g
}
WITH p, s, c, bounce, complaint
WHERE bounce OR complaint
RETURN p.profileId AS profileId, c.tenantId AS tenantId, coalesce(c.ref, c.id) AS campaignId,
       s.emailDispatchId AS dispatchId, s.emailedAt AS emailedAt, bounce, complaint
