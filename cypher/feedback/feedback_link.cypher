// After the profile locks: mark the sends this feedback is about (found by provider message id through
// the campaign_state_provider_message index) as bounced or complained, first time kept; getStats counts
// distinct profiles carrying them.
// Each send marked for the first time comes back (ids only) for the event webhooks' outbox, and with
// its Dispatch and accept time for the health guard's counters (feedback_dispatch_counts.cypher).
MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(c:Campaign)
WHERE s.emailProviderMessageId IN $messageIds
WITH p, s, c, $bounced AND s.bouncedAt IS NULL AS bounce, $complained AND s.complainedAt IS NULL AS complaint
SET s.bouncedAt = CASE WHEN $bounced THEN coalesce(s.bouncedAt, $now) ELSE s.bouncedAt END,
    s.complainedAt = CASE WHEN $complained THEN coalesce(s.complainedAt, $now) ELSE s.complainedAt END
WITH p, s, c, bounce, complaint
WHERE bounce OR complaint
RETURN p.profileId AS profileId, c.tenantId AS tenantId, coalesce(c.ref, c.id) AS campaignId,
       s.emailDispatchId AS dispatchId, s.emailedAt AS emailedAt, bounce, complaint
