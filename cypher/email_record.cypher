// After the provider answered: record each outcome against the claim THIS attempt made (matching
// claimId), never against someone else's. $rows are sorted by profileId and each row takes its profile
// lock first (ascending, as the claim did). Accepted sets emailedAt; throttled releases the claim (the
// provider proved it did not accept the message); rejected and uncertain keep the claim and say why.
// A claim the sweeper already counted `uncertain` (abandoned past the horizon) still gets its real
// outcome; `late` tells the caller how many, so the Dispatch counts each recipient once.
// Both ends are bound before the relationship is matched: each row costs one profile's degree.
// replan=skip: as in email_page, a fixed plan of unique-key seeks that statistics cannot improve.
CYPHER replan=skip
MATCH (c:Campaign {id: $campaignId})
WHERE c.createdAt = $campaignCreatedAt
UNWIND $rows AS row
MATCH (p:Profile {profileId: row.profileId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH c, p, row
MATCH (p)-[s:CAMPAIGN_STATE]->(c)
WHERE s.emailClaimId = $claimId AND s.emailedAt IS NULL
WITH row, s, s.emailOutcome = 'uncertain' AND s.emailOutcomeReason = 'claim_abandoned' AS late
SET s.emailedAt = CASE WHEN row.outcome = 'accepted' THEN $now ELSE null END,
    s.emailOutcome = row.outcome,
    s.emailOutcomeReason = row.reason,
    s.emailOutcomeAt = $now,
    s.emailProviderMessageId = row.messageId
// Only a throttled claim is released; the others keep theirs untouched (writing a property back as it
// was cost ~8% of the statement).
FOREACH (_ IN CASE WHEN row.outcome = 'throttled' THEN [1] ELSE [] END |
  SET s.emailClaimedAt = null, s.emailClaimId = null)
RETURN count(CASE WHEN late THEN 1 END) AS late
