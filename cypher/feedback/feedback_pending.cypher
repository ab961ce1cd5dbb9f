// After the profile locks and feedback_link: a bounce or complaint about message ids no send carries yet
// (the provider's webhook outran the record of the send: the catcher has the message before the walk's
// record transaction commits) is kept, one node per id form, for that record to count
// (email_record_feedback.cypher). Nothing is kept when any form names a recorded send: it was counted.
// A provider retry never reaches here (the FeedbackRecord dedup comes first).
OPTIONAL MATCH (:Profile)-[s:CAMPAIGN_STATE]->(:Campaign)
WHERE s.emailProviderMessageId IN $messageIds
WITH count(s) AS linked
WHERE linked = 0
UNWIND $messageIds AS messageId
CREATE (:PendingFeedback {messageId: messageId, forms: $messageIds, key: $key, bounced: $bounced,
                          complained: $complained, receivedAt: $now})
RETURN count(*) AS kept
