// The tenants whose sends this feedback record is about: the campaigns of the sends with these provider
// message ids (relationship index campaign_state_provider_message). A suppression remembers them
// (`causedBy`), so a tenant reads its reason, detail and dates only when its own sends caused it.
UNWIND $messageIds AS messageId
MATCH (:Profile)-[s:CAMPAIGN_STATE]->(c:Campaign)
WHERE s.emailProviderMessageId = messageId
RETURN collect(DISTINCT c.tenantId) AS tenants
