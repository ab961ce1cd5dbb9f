UNWIND members AS p
  WITH c, p WHERE NOT {{AGE_OK}}
  UNWIND [(p)<-[:GUARDIAN_OF {consent: 'granted'}]-(guardian) | guardian] AS g
  WITH c, g, collect(p.profileId) AS via, min(p.profileId) AS first
  WHERE (c.tenantId IS NULL OR c.tenantId IN coalesce(g.tenants, []))
    AND size([(g)-[:GUARDIAN_OF {consent: 'granted'}]->(p)
              WHERE p.profileId < first AND NOT {{AGE_OK}} AND {{MEMBER}} | p]) = 0
  WITH c, g AS p, via
  WHERE NOT {{MEMBER}}
  WITH c, p, via