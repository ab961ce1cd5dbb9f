// addAudience, one chunk, run after lock_campaign in the same transaction: the lock serialises
// concurrent adds and self-enrolments, so "no membership yet" stays true until this commit and
// `added` counts only memberships this transaction created. $profileIds are distinct. The age is the
// campaign tenant's view of the person over the shared facts (TENANT_VIEW; docs/people.md).
MATCH (c:Campaign {id: $campaignId})
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
{{TENANT_VIEW}}
WITH c, p, view WHERE {{AUDIENCE_AGE_OK}}
OPTIONAL MATCH (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
WITH c, p, m IS NULL AS isNew
FOREACH (_ IN CASE WHEN isNew THEN [1] ELSE [] END |
  CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {campaignId: c.id, profileId: p.profileId, addedAt: $now,
                                     source: $source, selfEnrolled: false}]->(c))
RETURN count(p) AS count, sum(CASE WHEN isNew THEN 1 ELSE 0 END) AS added
