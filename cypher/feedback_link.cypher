// After the profile locks: mark the sends this feedback is about (found by provider message id through
// the campaign_state_provider_message index) as bounced or complained, first time kept; getStats counts
// distinct profiles carrying them.
MATCH (:Profile)-[s:CAMPAIGN_STATE]->(:Campaign)
WHERE s.emailProviderMessageId IN $messageIds
SET s.bouncedAt = CASE WHEN $bounced THEN coalesce(s.bouncedAt, $now) ELSE s.bouncedAt END,
    s.complainedAt = CASE WHEN $complained THEN coalesce(s.complainedAt, $now) ELSE s.complainedAt END
RETURN count(s) AS linked
