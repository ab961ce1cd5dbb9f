// One profile as its reader sees it (docs/people.md): $tenant null (platform) reads the shared facts;
// a tenant reads its view over them. `view` is that tenant's view (null when it wrote nothing); its
// properties override the profile's in campaigns/profiles/records.py, a list it named (`emailsOwn`,
// `tagsOwn`, `connectionsOwn`) replaces the shared one, and a guardian link it recorded replaces the
// shared link of that pair. Nothing another tenant wrote is read.
MATCH (p:Profile {profileId: $profileId}) WHERE $tenant IS NULL OR $tenant IN p.tenants
OPTIONAL MATCH (p)-[:HAS_VIEW]->(view:TenantView) WHERE view.tenantId = $tenant
RETURN p {.*} AS profile, view {.*} AS view,
       CASE WHEN view.emailsOwn
         THEN [(view)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {type: 'email'}) |
                {address: m.value, verified: m.isVerified, primary: m.isPrimary}]
         ELSE [(p)-[:HAS_CONTACT_METHOD]->(m:ContactMethod {type: 'email'}) |
                {address: m.value, verified: m.isVerified, primary: m.isPrimary}]
       END AS emails,
       [(p)-[r:HAS_TAG]->(t:Tag)
          WHERE CASE WHEN view.tagsOwn THEN r.tenantId = $tenant ELSE r.tenantId IS NULL END | t.slug] AS tags,
       [(p)-[r:CONNECTED_WITH]-(o:Profile)
          WHERE ($tenant IS NULL OR $tenant IN o.tenants)
            AND CASE WHEN view.connectionsOwn THEN r.tenantId = $tenant ELSE r.tenantId IS NULL END
          | o.profileId] AS connections,
       [(g:Profile)-[r:GUARDIAN_OF]->(p)
          WHERE ($tenant IS NULL AND r.tenantId IS NULL)
             OR ($tenant IN g.tenants AND (r.tenantId = $tenant OR (r.tenantId IS NULL AND NOT EXISTS {
                  (g)-[own:GUARDIAN_OF]->(p) WHERE own.tenantId = $tenant })))
          | {profileId: g.profileId, consent: r.consent}] AS guardians,
       [(p)-[r:GUARDIAN_OF]->(m:Profile)
          WHERE ($tenant IS NULL AND r.tenantId IS NULL)
             OR ($tenant IN m.tenants AND (r.tenantId = $tenant OR (r.tenantId IS NULL AND NOT EXISTS {
                  (p)-[own:GUARDIAN_OF]->(m) WHERE own.tenantId = $tenant })))
          | {profileId: m.profileId, consent: r.consent}] AS guardianOf
