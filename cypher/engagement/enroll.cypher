// enroll, after lock_campaign: eligibility is checked under the lock; an existing membership is kept
// as it is (idempotent), otherwise a self-enrolled one is created.
MATCH (c:Campaign {id: $campaignId}) USING INDEX c:Campaign(id)
MATCH (p:Profile {profileId: $profileId})
{{TENANT_VIEW}}
WITH c, p, view WHERE {{SELF_ENROLLABLE}}
OPTIONAL MATCH (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
WITH c, p, m IS NULL AS isNew
FOREACH (_ IN CASE WHEN isNew THEN [1] ELSE [] END |
  CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: p.profileId, addedAt: $now,
                                     source: 'self', selfEnrolled: true}]->(c))
RETURN isNew AS created
