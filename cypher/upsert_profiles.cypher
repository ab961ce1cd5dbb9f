// Batched profile upsert. Rows arrive sorted by profileId, so profile locks are taken in ascending
// order. List fields that are null are left untouched; a provided list replaces the stored one.
UNWIND $rows AS row
OPTIONAL MATCH (existing:Profile {profileId: row.profileId})
WITH row, existing IS NULL AS created
MERGE (p:Profile {profileId: row.profileId})
  ON CREATE SET p.announcementEmailOptOut = false, p.announcementPushOptOut = false
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1,
    p.did = row.did, p.dob = row.dob, p.locale = row.locale,
    p.isManaged = row.isManaged, p.isServiceProfile = row.isServiceProfile,
    p.notificationsWebhook = row.notificationsWebhook
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
  OPTIONAL MATCH (p)-[old:HAS_TAG]->(:Tag)
  DELETE old
  WITH DISTINCT p, row
  UNWIND row.tags AS slug
  MERGE (t:Tag {slug: slug})
  MERGE (p)-[:HAS_TAG]->(t)
}
RETURN sum(CASE WHEN created THEN 1 ELSE 0 END) AS created, count(*) AS total
