// The profiles a feedback record is about: every profile with an email contact of these exact values,
// shared or in a tenant's view of them (docs/people.md: a view-only address is the person's as much as a
// shared one; index contact_method_value, then the contact's owner), and the recipients of these provider
// message ids (relationship index campaign_state_provider_message). Read before the profile locks are
// taken, in ascending order.
CALL () {
  UNWIND $values AS value
  MATCH (m:ContactMethod {type: 'email', value: value})<-[:HAS_CONTACT_METHOD]-(p:Profile)
  RETURN p.profileId AS profileId
  UNION
  UNWIND $values AS value
  MATCH (m:ContactMethod {type: 'email', value: value})<-[:HAS_CONTACT_METHOD]-(:TenantView)
        <-[:HAS_VIEW]-(p:Profile)
  RETURN p.profileId AS profileId
  UNION
  MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign)
  WHERE s.emailProviderMessageId IN $messageIds
  RETURN p.profileId AS profileId
}
RETURN collect(DISTINCT profileId) AS profileIds
