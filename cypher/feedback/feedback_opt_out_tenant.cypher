// A spam complaint about tenants' email ($tenants: the campaigns of the sends its provider message ids
// name) records the person's opt-out of those tenants' announcement email only, on each tenant's view
// of the person (created if absent), as that tenant's own unsubscribe link does (opt_out_tenant.cypher);
// the first opt-out time kept. The address suppression stays deployment-wide (feedback_suppress).
// A profile is opted out of tenant T where T's send named by a message id reached them, or T holds them
// and the complained-about address is theirs as T reads it (T's own list where it named one, else the
// shared one: docs/people.md), so an address only another tenant's view holds opts out of nothing for T.
// The caller holds the profile locks (ascending); one unique seek per profile and the expansion of its
// views, addresses and, for a message id, its sends.
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
UNWIND $tenants AS tenantId
OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = tenantId
WITH p, tenantId, CASE WHEN coalesce(view.emailsOwn, false)
       THEN [(view)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {type: 'email'}) | toLower(m.value)]
       ELSE [(p)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {type: 'email'}) | toLower(m.value)] END AS addresses
WHERE (tenantId IN coalesce(p.tenants, []) AND any(address IN addresses WHERE address IN $addresses))
   OR EXISTS {
  MATCH (p)-[s:CAMPAIGN_STATE]->(:Campaign {tenantId: tenantId})
  WHERE s.emailProviderMessageId IN $messageIds
}
MERGE (own:TenantView {tenantId: tenantId, profileId: p.profileId})
MERGE (p)-[:HAS_VIEW]->(own)
WITH own, coalesce(own.announcementEmailOptOut, false) AS already
SET own.announcementEmailOptOut = true,
    own.announcementEmailOptOutAt = CASE WHEN already THEN own.announcementEmailOptOutAt ELSE $now END
RETURN count(own) AS optedOut
