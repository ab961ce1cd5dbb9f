// One keyset page of email candidates after $cursor, in profileId order (ordered index range seek).
// Opt-out, age and contact are filtered BEFORE the LIMIT, so a page is made of people who can receive
// email. Claims are deliberately not filtered here: the claim transaction skips claimed recipients
// under their locks, and concurrent workers on one page then read the same page and claim once.
MATCH (c:Campaign {id: $campaignId})
MATCH (p:Profile)
USING INDEX p:Profile(profileId)
WHERE p.profileId > $cursor
  AND EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) }
  AND NOT coalesce(p.announcementEmailOptOut, false)
  AND {{EMAIL_AGE_OK}}
  AND {{EMAIL_CONTACT_OK}}
WITH p
ORDER BY p.profileId
LIMIT $limit
RETURN p.profileId AS profileId
ORDER BY profileId
