// Reviewed-dispatch preview, email part: the sorted email-eligible members with their one address, at
// most $cap of them. The address is part of the preview token, so a changed address invalidates it.
MATCH (c:Campaign {id: $campaignId})
MATCH (p:Profile)-[:IN_CAMPAIGN_AUDIENCE]->(c)
WHERE NOT coalesce(p.announcementEmailOptOut, false)
  AND {{EMAIL_AGE_OK}}
  AND {{EMAIL_CONTACT_OK}}
  AND NOT EXISTS {
    (p)-[s:CAMPAIGN_STATE]->(c) WHERE s.emailClaimedAt IS NOT NULL OR s.emailedAt IS NOT NULL
  }
WITH DISTINCT p
ORDER BY p.profileId
LIMIT $cap
RETURN p.profileId AS profileId, {{PRIMARY_EMAILS}}[0] AS address
