// A tenant credential's facts about its members (docs/people.md): each row's named facts go into the
// tenant's view of the person, created on its first write, never onto the Profile. `row.props` holds
// only the named properties (`+=` removes one whose value is null: the shared fact shows again); a list
// that is null was omitted, while a given list replaces the view's, with `row.emailsOwn` / `row.tagsOwn`
// true (the tenant named the list, an empty one included) or null (the row cleared it: fall back).
// The view is found by the tenant_view_key constraint's index, the tags by the person's own HAS_TAG.
// Rows arrive sorted by profileId under the profile locks upsert_profiles.cypher took.
UNWIND $rows AS row
MATCH (p:Profile {profileId: row.profileId})
MERGE (view:TenantView {tenantId: $tenant, profileId: row.profileId})
MERGE (p)-[:HAS_VIEW]->(view)
SET view += row.props
WITH p, view, row
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
RETURN count(*) AS views
