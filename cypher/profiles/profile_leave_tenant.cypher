// A tenant lets a person go: out of its tenant and its campaigns' audiences, and all it wrote about
// them goes too (docs/people.md): its view with the view's emails, its tags, connections and guardian
// links of this person.
MATCH (p:Profile {profileId: $profileId}) WHERE $tenant IN p.tenants
SET p.tenants = [t IN p.tenants WHERE t <> $tenant]
WITH p
OPTIONAL MATCH (p)-[m:IN_CAMPAIGN_AUDIENCE]->(:Campaign {tenantId: $tenant})
DELETE m
WITH DISTINCT p
CALL (p) {
  OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = $tenant
  OPTIONAL MATCH (view)-[:HAS_CONTACT_METHOD]->(vm:ContactMethod)
  DETACH DELETE vm, view
}
CALL (p) {
  OPTIONAL MATCH (p)-[own:HAS_TAG|CONNECTED_WITH|GUARDIAN_OF]-() WHERE own.tenantId = $tenant
  DELETE own
}
RETURN p.tenants = [] AS orphaned
