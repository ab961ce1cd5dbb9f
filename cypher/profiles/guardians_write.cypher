// Replace each row's guardian set: rows sorted by the minor's profileId, their profiles and every named
// guardian already locked in ascending profileId (campaigns/profiles/guardians.py), and checked by
// guardians_check. A link whose consent does not change keeps its provenance, so running the same
// input again writes nothing; a new or changed link records how (`source`), through what (`sourceRef`:
// the audit entry of the write), by whom (`setBy`) and when (`updatedAt`). A named consent of null (a
// roster, which carries none) creates a link `revoked` and leaves an existing link's consent alone.
// A tenant credential ($tenant) removes only links from guardians in its tenant.
UNWIND $rows AS row
MATCH (m:Profile {profileId: row.profileId})
CALL (m, row) {
  OPTIONAL MATCH (old:Profile)-[r:GUARDIAN_OF]->(m)
    WHERE ($tenant IS NULL OR $tenant IN old.tenants) AND NOT old.profileId IN [g IN row.guardians | g.profileId]
  DELETE r
  RETURN count(r) AS removed
}
CALL (m, row) {
  UNWIND row.guardians AS named
  MATCH (g:Profile {profileId: named.profileId})
  OPTIONAL MATCH (g)-[known:GUARDIAN_OF]->(m)
  WITH g, known, coalesce(named.consent, known.consent, 'revoked') AS consent
  WITH g, consent, known IS NULL OR known.consent <> consent AS changed
  MERGE (g)-[r:GUARDIAN_OF]->(m)
  FOREACH (_ IN CASE WHEN changed THEN [1] ELSE [] END |
    SET r.consent = consent, r.source = $source, r.sourceRef = $sourceRef, r.setBy = $setBy,
        r.updatedAt = $now)
  RETURN sum(CASE WHEN changed THEN 1 ELSE 0 END) AS changed
}
RETURN sum(removed) AS removed, sum(changed) AS changed
