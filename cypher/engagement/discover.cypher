// discover: live, in-window, discoverable campaigns the caller passes the age policy for and is not
// yet a member of, in the tenants (apps) they belong to. Live campaigns come from the campaign_status index.
// The age and the locale are each campaign tenant's view of the caller (TENANT_VIEW; docs/people.md).
MATCH (p:Profile {profileId: $profileId})
MATCH (c:Campaign {status: 'live'})
WHERE c.discoverable AND c.tenantId IN coalesce(p.tenants, [])
  AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
  AND NOT EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) }
{{TENANT_VIEW}}
WITH p, c, view WHERE {{CAMPAIGN_AGE_OK}}
RETURN c {.id, .definition, .startsAt, .endsAt, .messagePriority} AS campaign,
       coalesce(view.locale, p.locale) AS locale
ORDER BY c.id
LIMIT $limit
