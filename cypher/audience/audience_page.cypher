// getAudience: one keyset page of eligible members, ordered by profileId. The seek and the order come
// from the relationship index audience_member (campaignId, profileId); never SKIP. The campaign is not
// looked up by id here on purpose: that would make the planner expand every membership and sort.
// Ordering by both index keys lets it read the index in order and stop at LIMIT. The :Campaign label
// skips the memberships of a deleted incarnation of the same id that are still being reaped. A member's
// age is the campaign tenant's view of them over the shared facts (TENANT_VIEW; docs/people.md): an
// expansion of each member read, which keeps the index order. The SEEK hint pins the seek: statistics
// of a young graph can make the planner scan the whole index instead (export_recipients.cypher).
MATCH (p:Profile)-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign)
USING INDEX SEEK m:IN_CAMPAIGN_AUDIENCE(campaignId, profileId)
WHERE m.campaignId = $campaignId AND m.profileId > $cursor
{{TENANT_VIEW}}
WITH p, m, c, view WHERE {{AUDIENCE_AGE_OK}}
RETURN p.profileId AS profileId, p.did AS did, true AS member
ORDER BY m.campaignId, m.profileId
LIMIT $limit
