// Batched profile upsert. Rows arrive sorted by profileId, so profile locks are taken in ascending
// order. A row changes only what it named: `row.props` holds just the named properties (`+=` removes a
// property whose value is null), and a list field that is null was omitted and is left untouched,
// while a provided list (empty for an explicit null) replaces the stored one.
// Tenants: a named set replaces the stored one (platform credentials only); otherwise a new
// profile joins $tenant and an existing one keeps its set (a tenant credential never reaches here for a
// profile outside its tenant: campaigns/profiles/records.py refuses the batch first).
// A new profile gets its campaignUnsubscribeId here, once for life: allocating it inside the email
// claim cost a unique-index insert per first-time recipient on the send's hot path.
// These are the shared facts (docs/people.md): a tenant credential's rows name none of them here
// (upsert_views.cypher writes its view), and the tags replaced are the shared ones only, so what a
// tenant tagged stays; CREATE, not MERGE, since MERGE would take a tenant's HAS_TAG of the slug for one.
// `row.identity` is a tenant row's `did` / `isServiceProfile`: set only on the profile it creates, never
// on an existing person every tenant reads (a platform row names them in `row.props`).
UNWIND $rows AS row
OPTIONAL MATCH (existing:Profile {profileId: row.profileId})
WITH row, existing IS NULL AS created
MERGE (p:Profile {profileId: row.profileId})
  ON CREATE SET p.announcementEmailOptOut = false, p.announcementPushOptOut = false,
                p.isManaged = false, p.isServiceProfile = false, p.campaignUnsubscribeId = randomUUID(),
                p += coalesce(row.identity, {})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1, p += row.props,
    p.tenants = coalesce(row.tenants, p.tenants, [$tenant])
WITH p, row, created
CALL (p, row) {
  WITH p, row WHERE row.emails IS NOT NULL
  OPTIONAL MATCH (p)-[:HAS_CONTACT_METHOD]->(old:ContactMethod {type: 'email'})
  DETACH DELETE old
  WITH DISTINCT p, row
  UNWIND row.emails AS email
  CREATE (p)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: email.address,
                                                     isVerified: email.verified, isPrimary: email.primary})
}
CALL (p, row) {
  WITH p, row WHERE row.tags IS NOT NULL
  OPTIONAL MATCH (p)-[old:HAS_TAG]->(:Tag) WHERE old.tenantId IS NULL
  DELETE old
  WITH DISTINCT p, row
  UNWIND row.tags AS slug
  MERGE (t:Tag {slug: slug})
  CREATE (p)-[:HAS_TAG {slug: slug, profileId: p.profileId}]->(t)
}
RETURN sum(CASE WHEN created THEN 1 ELSE 0 END) AS created, count(*) AS total
