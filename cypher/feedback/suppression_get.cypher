// A tenant's credential ($tenant not null) sees an address only if one of its members has it (a shared
// address, or one in the tenant's own view of them: docs/people.md; index contact_method_value), and its
// reason, detail and dates only if the tenant's own sends caused the suppression (`causedBy`, or, for
// feedback that outran the record of its send, no tenant known then, the sends its message ids name now:
// relationship index campaign_state_provider_message); else only that the address is suppressed. A
// platform credential ($tenant null) sees everything.
MATCH (s:EmailSuppression {address: $address})
WHERE $tenant IS NULL OR EXISTS {
  MATCH (:ContactMethod {type: 'email', value: s.address})<-[:HAS_CONTACT_METHOD]-(p:Profile)
  WHERE $tenant IN p.tenants
} OR EXISTS {
  MATCH (:ContactMethod {type: 'email', value: s.address})
        <-[:HAS_CONTACT_METHOD]-(:TenantView {tenantId: $tenant})
        <-[:HAS_VIEW]-(p:Profile)
  WHERE $tenant IN p.tenants
}
WITH s, $tenant IS NULL OR $tenant IN coalesce(s.causedBy, [])
        OR (size(coalesce(s.causedBy, [])) = 0 AND EXISTS {
          MATCH (:Profile)-[sent:CAMPAIGN_STATE]->(c:Campaign)
          WHERE sent.emailProviderMessageId IN coalesce(s.causeMessageIds, []) AND c.tenantId = $tenant
        }) AS detailed
RETURN CASE WHEN detailed
         THEN s {.address, .reason, .source, .detail, .suppressedAt, .lastFeedbackAt, .feedbackCount,
                 detailed: true}
         ELSE {address: s.address, detailed: false}
       END AS suppression
