UNWIND members AS p
  {{TENANT_VIEW}}
  WITH c, p, view WHERE NOT {{AGE_OK}}
  UNWIND [(p)<-[link:GUARDIAN_OF {consent: 'granted'}]-(guardian) WHERE {{LINK_OF_TENANT}} | guardian] AS g
  WITH c, g, collect(p.profileId) AS via, min(p.profileId) AS first
  WHERE (c.tenantId IS NULL OR c.tenantId IN coalesce(g.tenants, []))
    AND NOT EXISTS {
      MATCH (g)-[link:GUARDIAN_OF {consent: 'granted'}]->(p)
      WHERE p.profileId < first AND {{EARLIER_LINK_OF_TENANT}}
      {{TENANT_VIEW}}
      WITH c, p, view WHERE NOT {{AGE_OK}} AND {{MEMBER}}
      RETURN p
    }
  WITH c, g AS p, via
  {{TENANT_VIEW}}
  WITH c, p, view, via
  WHERE NOT {{MEMBER}}
  WITH c, p, view, via
