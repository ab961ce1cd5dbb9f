// After the provider answered (profiles locked by the caller, ascending): record each outcome against
// the claim THIS attempt made (matching claimId), never against someone else's. Accepted sets
// emailedAt; throttled releases the claim (the provider proved it did not accept the message);
// rejected and uncertain keep the claim and say why.
// Both ends are bound before the relationship is matched, so each row costs one profile's degree,
// never a walk over every CAMPAIGN_STATE of the campaign.
MATCH (c:Campaign {id: $campaignId})
WHERE c.createdAt = $campaignCreatedAt
UNWIND $rows AS row
MATCH (p:Profile {profileId: row.profileId})
MATCH (p)-[s:CAMPAIGN_STATE]->(c)
WHERE s.emailClaimId = $claimId AND s.emailedAt IS NULL
SET s.emailedAt = CASE WHEN row.outcome = 'accepted' THEN $now ELSE null END,
    s.emailClaimedAt = CASE WHEN row.outcome = 'throttled' THEN null ELSE s.emailClaimedAt END,
    s.emailClaimId = CASE WHEN row.outcome = 'throttled' THEN null ELSE s.emailClaimId END,
    s.emailOutcome = row.outcome,
    s.emailOutcomeReason = row.reason,
    s.emailOutcomeAt = $now,
    s.emailProviderMessageId = row.messageId
RETURN row.outcome AS outcome, count(*) AS n
