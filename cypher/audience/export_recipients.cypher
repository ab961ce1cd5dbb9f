// exports/campaigns/{id}/recipients: one keyset page of the campaign's members with what happened to each
// on every channel. The seek and the order come from the relationship index audience_member
// (campaignId, profileId), as getAudience's (audience_page.cypher): never SKIP, and the LIMIT applies
// before the state is read, so a page costs its own rows whatever the audience. The :Campaign label
// skips memberships of a deleted incarnation still being reaped. Ids and times only: no address, no copy.
// The SEEK hint pins the seek: a plain index hint may be served by a scan of the whole index when the
// statistics say one campaign holds every membership (a young graph), and the plan would be kept.
// eligibleNow reads the campaign tenant's view of each member (TENANT_VIEW; docs/people.md).
MATCH (p:Profile)-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign)
USING INDEX SEEK m:IN_CAMPAIGN_AUDIENCE(campaignId, profileId)
WHERE m.campaignId = $campaignId AND m.profileId > $cursor
WITH p, m, c
ORDER BY m.campaignId, m.profileId
LIMIT $limit
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
{{TENANT_VIEW}}
RETURN m.profileId AS profileId, m.source AS source, coalesce(m.selfEnrolled, false) AS selfEnrolled,
       m.addedAt AS addedAt, {{CAMPAIGN_AGE_OK}} AS eligibleNow,
       s.notifiedAt AS notifiedAt, s.notifyCappedAt AS notifyCappedAt,
       s.emailedAt AS emailedAt, s.emailOutcome AS emailOutcome, s.emailOutcomeReason AS emailOutcomeReason,
       s.emailCappedAt AS emailCappedAt, s.bouncedAt AS bouncedAt, s.complainedAt AS complainedAt,
       s.emailClickedAt AS emailClickedAt, s.unsubscribedAt AS unsubscribedAt,
       coalesce(s.shownCount, 0) AS shown, coalesce(s.clickedCount, 0) AS clicked,
       coalesce(s.dismissedCount, 0) AS dismissed, s.variantId AS variantId
