// The rare case of an email claim (email_page.cypher): claimed profiles that still have no
// campaignUnsubscribeId get one here, in the claim's transaction and under the profile locks it took,
// once for life (docs/architecture.md §4). Profiles get theirs at creation (upsert_profiles.cypher)
// or from the schema backfill, so in a backfilled graph this never runs.
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
SET p.campaignUnsubscribeId = coalesce(p.campaignUnsubscribeId, randomUUID())
RETURN p.profileId AS profileId, p.campaignUnsubscribeId AS unsubscribeId
