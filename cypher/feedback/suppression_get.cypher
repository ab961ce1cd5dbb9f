// A tenant's credential ($tenant not null) sees an address only if one of its members has it.
MATCH (s:EmailSuppression {address: $address})
WHERE $tenant IS NULL OR EXISTS {
  MATCH (:ContactMethod {type: 'email', value: s.address})<-[:HAS_CONTACT_METHOD]-(p:Profile)
  WHERE $tenant IN p.tenants
}
RETURN s {.*} AS suppression
