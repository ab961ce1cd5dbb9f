
UNWIND $refs AS ref
MATCH (x:Campaign {tenantId: $tenantId, ref: ref})
RETURN x.ref AS ref, x.id AS id, x.definition AS definition
