// Suppress addresses (rows sorted by address, normalized). The first reason is kept, except that a spam
// complaint outranks any other: it is the one a sender's reputation cannot afford to repeat. `causedBy`
// goes with the reason: the tenants whose sends the feedback that set it was about ($tenants; none for
// a provider's own list), the only tenants that read its reason, detail and dates; and so do the message
// ids it named (`causeMessageIds`), for feedback that outran the record of its send: no tenant is known
// then, and the send's tenant reads the reason once the record lands (suppression_get.cypher).
UNWIND $rows AS row
MERGE (s:EmailSuppression {address: row.address})
  ON CREATE SET s.reason = row.reason, s.source = $source, s.detail = row.detail, s.suppressedAt = $now,
                s.causedBy = $tenants, s.causeMessageIds = $messageIds
WITH s, row, row.reason = 'spam_complaint' AND s.reason <> 'spam_complaint' AS upgrade
SET s.reason = CASE WHEN upgrade THEN row.reason ELSE s.reason END,
    s.detail = CASE WHEN upgrade THEN row.detail ELSE s.detail END,
    s.source = CASE WHEN upgrade THEN $source ELSE s.source END,
    s.causedBy = CASE WHEN upgrade THEN $tenants ELSE s.causedBy END,
    s.causeMessageIds = CASE WHEN upgrade THEN $messageIds ELSE s.causeMessageIds END,
    s.lastFeedbackAt = $now,
    s.feedbackCount = coalesce(s.feedbackCount, 0) + 1
RETURN count(s) AS suppressed
