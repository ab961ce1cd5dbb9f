
MATCH (p:Profile {profileId: $profileId}) WHERE $tenant IS NULL OR $tenant IN p.tenants
RETURN p {.*} AS profile,
       [(p)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {type: 'email'}) |
          {address: m.value, verified: m.isVerified, primary: m.isPrimary}] AS emails,
       [(p)-[:HAS_TAG]->(t:Tag) | t.slug] AS tags,
       [(p)-[:CONNECTED_WITH]-(o:Profile) WHERE $tenant IS NULL OR $tenant IN o.tenants | o.profileId]
         AS connections,
       [(g:Profile)-[r:GUARDIAN_OF]->(p) WHERE $tenant IS NULL OR $tenant IN g.tenants |
          {profileId: g.profileId, consent: r.consent}] AS guardians,
       [(p)-[r:GUARDIAN_OF]->(m:Profile) WHERE $tenant IS NULL OR $tenant IN m.tenants |
          {profileId: m.profileId, consent: r.consent}] AS guardianOf
