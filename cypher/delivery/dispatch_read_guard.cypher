
CYPHER replan=skip
OPTIONAL MATCH (d:Dispatch {id: $dispatchId})
OPTIONAL MATCH (c:Campaign {id: $campaignId})
OPTIONAL MATCH (t:Tenant {tenantId: c.tenantId})
RETURN d {.*} AS dispatch, c {.*, tenantWeight: t.weight} AS campaign
