// Profiles made before upsert_profiles allocated campaignUnsubscribeId at creation get one now, so the
// email claim never pays the unique-index insert (the claim still allocates for a
// profile that has none). Under each profile's lock, taken in ascending profileId (docs/architecture.md
// section 5), and coalesced after it: an id a claim allocated meanwhile is never replaced, because
// unsubscribe links were already signed with it.
MATCH (p:Profile) WHERE p.campaignUnsubscribeId IS NULL
WITH p ORDER BY p.profileId LIMIT 10000
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p
SET p.campaignUnsubscribeId = coalesce(p.campaignUnsubscribeId, randomUUID())
RETURN count(p) AS n
