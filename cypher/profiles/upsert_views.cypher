// A tenant credential's facts about its members (docs/people.md): each row's named facts go into the
// tenant's view of the person, created on its first write, never onto the Profile. `row.props` holds
// only the named properties (`+=` removes one whose value is null: the shared fact shows again); a list
// that is null was omitted, while a given list replaces the view's, with `row.emailsOwn` / `row.tagsOwn`
// true (the tenant named the list, an empty one included) or null (the row cleared it: fall back).
// The view is found by the tenant_view_key constraint's index, the tags by the person's own HAS_TAG.
// Rows arrive sorted by profileId under the profile locks upsert_profiles.cypher took.
// `changed` names the rows whose facts this tenant's view did not hold yet, read before the write: the
// view's own facts and marks only, never the shared ones or another tenant's view of the person.
UNWIND $rows AS row
MATCH (p:Profile {profileId: row.profileId})
OPTIONAL MATCH (before:TenantView {tenantId: $tenant, profileId: row.profileId})
WITH p, row, before,
     CASE WHEN before IS NULL OR row.emails IS NULL THEN null
          ELSE [(before)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {type: 'email'})
                | {address: m.value, verified: m.isVerified, primary: m.isPrimary}] END AS emails,
     CASE WHEN before IS NULL OR row.tags IS NULL THEN null
          ELSE [(p)-[t:HAS_TAG]->(:Tag) WHERE t.tenantId = $tenant | t.slug] END AS tags,
     CASE WHEN before IS NULL OR row.connections IS NULL THEN null
          ELSE [(p)-[c:CONNECTED_WITH]-(:Profile) WHERE c.tenantId = $tenant | c] END AS links
WITH p, row, NOT coalesce(before IS NOT NULL
  AND all(k IN keys(row.props) WHERE coalesce(before[k] = row.props[k], before[k] IS NULL AND row.props[k] IS NULL))
  AND (emails IS NULL OR (coalesce(before.emailsOwn = row.emailsOwn, before.emailsOwn IS NULL AND row.emailsOwn IS NULL)
       AND size(emails) = size(row.emails) AND all(e IN row.emails WHERE e IN emails)))
  AND (tags IS NULL OR (coalesce(before.tagsOwn = row.tagsOwn, before.tagsOwn IS NULL AND row.tagsOwn IS NULL)
       AND size(tags) = size(row.tags) AND all(t IN row.tags WHERE t IN tags)))
  AND (links IS NULL OR (coalesce(before.connectionsOwn = row.own, before.connectionsOwn IS NULL AND row.own IS NULL)
       AND size(links) = size(row.connections)
       AND all(c IN row.connections WHERE any(l IN links WHERE c IN [startNode(l).profileId, endNode(l).profileId])))),
  false) AS changed
MERGE (view:TenantView {tenantId: $tenant, profileId: row.profileId})
MERGE (p)-[:HAS_VIEW]->(view)
SET view += row.props
WITH p, view, row, changed
CALL (view, row) {
  WITH view, row WHERE row.emails IS NOT NULL
  OPTIONAL MATCH (view)-[:HAS_CONTACT_METHOD]->(old:ContactMethod {type: 'email'})
  DETACH DELETE old
  WITH DISTINCT view, row
  SET view.emailsOwn = row.emailsOwn
  WITH view, row
  UNWIND row.emails AS email
  CREATE (view)-[:HAS_CONTACT_METHOD]->(:ContactMethod {type: 'email', value: email.address,
                                                        isVerified: email.verified, isPrimary: email.primary})
}
CALL (p, view, row) {
  WITH p, view, row WHERE row.tags IS NOT NULL
  OPTIONAL MATCH (p)-[old:HAS_TAG]->(:Tag) WHERE old.tenantId = $tenant
  DELETE old
  WITH DISTINCT p, view, row
  SET view.tagsOwn = row.tagsOwn
  WITH p, row
  UNWIND row.tags AS slug
  MERGE (t:Tag {slug: slug})
  MERGE (p)-[:HAS_TAG {slug: slug, profileId: p.profileId, tenantId: $tenant}]->(t)
}
RETURN collect(CASE WHEN changed THEN row.profileId END) AS changed
