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
// `unchanged` names the existing profiles whose stored shared facts already were all the row names (read
// before the write, in this one statement): a re-run of the same file reports them apart from `updated`.
// Lists compare as sets, as they are stored; a connection to a profile that does not exist differs.
UNWIND $rows AS row
OPTIONAL MATCH (existing:Profile {profileId: row.profileId})
WITH row, existing, existing IS NULL AS created,
     CASE WHEN existing IS NULL OR row.emails IS NULL THEN null
          ELSE [(existing)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {type: 'email'})
                | {address: m.value, verified: m.isVerified, primary: m.isPrimary}] END AS emails,
     CASE WHEN existing IS NULL OR row.tags IS NULL THEN null
          ELSE [(existing)-[t:HAS_TAG]->(:Tag) WHERE t.tenantId IS NULL | t.slug] END AS tags,
     CASE WHEN existing IS NULL OR row.connections IS NULL THEN null
          ELSE [(existing)-[c:CONNECTED_WITH]-(:Profile) WHERE c.tenantId IS NULL | c] END AS links
WITH row, created, coalesce(NOT created
  AND all(k IN keys(row.props) WHERE coalesce(existing[k] = row.props[k], existing[k] IS NULL AND row.props[k] IS NULL))
  AND (row.tenants IS NULL
       OR (size(row.tenants) = size(existing.tenants) AND all(t IN row.tenants WHERE t IN existing.tenants)))
  AND (emails IS NULL OR (size(emails) = size(row.emails) AND all(e IN row.emails WHERE e IN emails)))
  AND (tags IS NULL OR (size(tags) = size(row.tags) AND all(t IN row.tags WHERE t IN tags)))
  AND (links IS NULL OR (size(links) = size(row.connections)
       AND all(c IN row.connections WHERE any(l IN links WHERE c IN [startNode(l).profileId, endNode(l).profileId])))),
  false) AS same
MERGE (p:Profile {profileId: row.profileId})
  ON CREATE SET p.announcementEmailOptOut = false, p.announcementPushOptOut = false,
                p.isManaged = false, p.isServiceProfile = false, p.campaignUnsubscribeId = randomUUID(),
                p += coalesce(row.identity, {})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1, p += row.props,
    p.tenants = coalesce(row.tenants, p.tenants, [$tenant])
WITH p, row, created, same
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
RETURN sum(CASE WHEN created THEN 1 ELSE 0 END) AS created, count(*) AS total,
       collect(CASE WHEN same THEN row.profileId END) AS unchanged
