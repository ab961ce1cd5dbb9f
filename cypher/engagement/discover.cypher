// discover: live, in-window, discoverable campaigns the caller passes the age policy for and is not
// yet a member of, in the tenants (apps) they belong to. Live campaigns come from the campaign_status index.
MATCH (p:Profile {profileId: $profileId})
MATCH (c:Campaign {status: 'live'})
WHERE c.discoverable AND c.tenantId IN coalesce(p.tenants, [])
  AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
  AND {{CAMPAIGN_AGE_OK}}
  AND NOT EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) }
RETURN c {.id, .definition, .startsAt, .endsAt, .messagePriority} AS campaign, p.locale AS locale
ORDER BY c.id
LIMIT $limit
