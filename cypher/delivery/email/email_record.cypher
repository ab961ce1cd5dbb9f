// After the provider answered: record each outcome against the claim THIS attempt made (matching
// claimId), never against someone else's. $rows are sorted by profileId and each row takes its profile
// lock first (ascending, as the claim did). Accepted sets emailedAt; throttled releases the claim (the
// provider proved it did not accept the message); rejected and uncertain keep the claim and say why.
// A claim the sweeper already counted `uncertain` (abandoned past the horizon) still gets its real
// outcome; `late` tells the caller how many, so the Dispatch counts each recipient once.
// Each row names the CAMPAIGN_STATE its claim wrote (row.stateId, its elementId from email_page), so
// the row is one relationship seek, whatever the profile's degree (a recipient of many campaigns cost
// every row an expansion of all its relationships), and its profile is that relationship's start node,
// with no locking index seek (~10% of Neo4j's CPU in a send). The lock is still taken before the claim
// is read: the relationship is found first, its properties are read after the lock (the WHERE after
// the SET). An id Neo4j reused after a delete is harmless: no other relationship carries this
// attempt's claimId, and the end node must be this incarnation of the campaign.
// row.variantId: the A/B content variant sent, kept from the first send on (getStats.variants).
// replan=skip: as in email_page, a fixed plan of id seeks that statistics cannot improve.
CYPHER replan=skip
UNWIND $rows AS row
MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(c:Campaign)
WHERE elementId(s) = row.stateId
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p, s, c, row
WHERE c.id = $campaignId AND c.createdAt = $campaignCreatedAt
  AND s.emailClaimId = $claimId AND s.emailedAt IS NULL
WITH row, s, s.emailOutcome = 'uncertain' AND s.emailOutcomeReason = 'claim_abandoned' AS late
SET s.emailedAt = CASE WHEN row.outcome = 'accepted' THEN $now ELSE null END,
    s.emailOutcome = row.outcome,
    s.emailOutcomeReason = row.reason,
    s.emailOutcomeAt = $now,
    s.emailProviderMessageId = row.messageId,
    s.variantId = coalesce(s.variantId, row.variantId)
// Only a throttled claim is released; the others keep theirs untouched (writing a property back as it
// was cost ~8% of the statement).
FOREACH (_ IN CASE WHEN row.outcome = 'throttled' THEN [1] ELSE [] END |
  SET s.emailClaimedAt = null, s.emailClaimId = null)
RETURN count(CASE WHEN late THEN 1 END) AS late
