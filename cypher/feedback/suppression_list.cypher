// suppressions.list: keyset page by address (unique index range seek, in index order), optional reason.
// A tenant's credential ($tenant not null) sees only addresses one of its members has.
MATCH (s:EmailSuppression)
WHERE s.address > $cursor AND ($reason IS NULL OR s.reason = $reason)
  AND ($tenant IS NULL OR EXISTS {
    MATCH (:ContactMethod {type: 'email', value: s.address})<-[:HAS_CONTACT_METHOD]-(p:Profile)
    WHERE $tenant IN p.tenants
  })
RETURN s {.*} AS suppression
ORDER BY s.address
LIMIT $limit
