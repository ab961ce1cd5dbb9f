// Replace each row's guardian set: rows sorted by the minor's profileId, their profiles and every named
// guardian already locked in ascending profileId (campaigns/profiles/guardians.py), and checked by
// guardians_check. A link whose consent does not change keeps its provenance, so running the same
// input again writes nothing; a new or changed link records how (`source`), through what (`sourceRef`:
// the audit entry of the write), by whom (`setBy`) and when (`updatedAt`). A named consent of null (a
// roster, which carries none) leaves an existing link's consent alone; a new link takes the shared
// link's consent where a tenant records its own over one (so a roster import after the upgrade changes
// no consent), else `revoked`.
// Each writer has links of its own (docs/people.md): a tenant credential ($tenant) reads, changes,
// creates and removes only links carrying its tenantId; a platform credential ($tenant null) only the
// shared links, which carry none. Another tenant's link or consent is never touched, so the link is
// found by its tenantId and created, not MERGEd (a MERGE on the pattern would take another's).
UNWIND $rows AS row
MATCH (m:Profile {profileId: row.profileId})
CALL (m, row) {
  OPTIONAL MATCH (old:Profile)-[r:GUARDIAN_OF]->(m)
    WHERE coalesce(r.tenantId, '') = coalesce($tenant, '') AND NOT old.profileId IN [g IN row.guardians | g.profileId]
  DELETE r
  RETURN count(r) AS removed
}
CALL (m, row) {
  UNWIND row.guardians AS named
  MATCH (g:Profile {profileId: named.profileId})
  OPTIONAL MATCH (g)-[known:GUARDIAN_OF]->(m) WHERE coalesce(known.tenantId, '') = coalesce($tenant, '')
  OPTIONAL MATCH (g)-[shared:GUARDIAN_OF]->(m) WHERE shared.tenantId IS NULL
  WITH m, g, known, coalesce(named.consent, known.consent, shared.consent, 'revoked') AS consent
  WITH m, g, known, consent, known IS NULL OR known.consent <> consent AS changed
  FOREACH (_ IN CASE WHEN known IS NULL THEN [1] ELSE [] END |
    CREATE (g)-[:GUARDIAN_OF {tenantId: $tenant, consent: consent, source: $source, sourceRef: $sourceRef,
                              setBy: $setBy, updatedAt: $now}]->(m))
  FOREACH (_ IN CASE WHEN known IS NOT NULL AND changed THEN [1] ELSE [] END |
    SET known.consent = consent, known.source = $source, known.sourceRef = $sourceRef, known.setBy = $setBy,
        known.updatedAt = $now)
  RETURN sum(CASE WHEN changed THEN 1 ELSE 0 END) AS changed
}
RETURN sum(removed) AS removed, sum(changed) AS changed
