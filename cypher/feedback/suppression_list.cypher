// suppressions.list: keyset page by address (unique index range seek, in index order), optional reason.
// A tenant's credential ($tenant not null) sees only addresses one of its members has (shared, or in the
// tenant's own view of them), and the reason, detail and dates only of those its own sends caused
// (`causedBy`; suppression_get.cypher): its reason filter matches only those, so filtering reveals no
// reason either.
MATCH (s:EmailSuppression)
WHERE s.address > $cursor
  AND ($tenant IS NULL OR EXISTS {
    MATCH (:ContactMethod {type: 'email', value: s.address})<-[:HAS_CONTACT_METHOD]-(p:Profile)
    WHERE $tenant IN p.tenants
  } OR EXISTS {
    MATCH (:ContactMethod {type: 'email', value: s.address})
        <-[:HAS_CONTACT_METHOD]-(:TenantView {tenantId: $tenant})
          <-[:HAS_VIEW]-(p:Profile)
    WHERE $tenant IN p.tenants
  })
WITH s, $tenant IS NULL OR $tenant IN coalesce(s.causedBy, [])
        OR (size(coalesce(s.causedBy, [])) = 0 AND EXISTS {
          MATCH (:Profile)-[sent:CAMPAIGN_STATE]->(c:Campaign)
          WHERE sent.emailProviderMessageId IN coalesce(s.causeMessageIds, []) AND c.tenantId = $tenant
        }) AS detailed
WHERE $reason IS NULL OR (detailed AND s.reason = $reason)
RETURN CASE WHEN detailed
         THEN s {.address, .reason, .source, .detail, .suppressedAt, .lastFeedbackAt, .feedbackCount,
                 detailed: true}
         ELSE {address: s.address, detailed: false}
       END AS suppression
ORDER BY s.address
LIMIT $limit
