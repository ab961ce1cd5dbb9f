// The settings seed (graph/tenants.py:seed_tenants): each tenant the settings name is seeded once, ever.
// A marker per tenant (:SchemaMigration {name: "tenant_seed:<id>"}) says it was; a record that exists is
// never overwritten (ON CREATE only), so edits made through tenants.update survive every later start.
UNWIND $rows AS row
WITH row WHERE NOT EXISTS { MATCH (:SchemaMigration {name: row.marker}) }
MERGE (t:Tenant {tenantId: row.tenantId})
  ON CREATE SET t += row.props, t.createdAt = $now, t.updatedAt = $now, t.seededAt = $now
MERGE (:SchemaMigration {name: row.marker})
RETURN collect(CASE WHEN t.seededAt = $now THEN row.tenantId END) AS created
