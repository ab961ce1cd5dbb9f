
MATCH (c:Campaign {id: $id})
OPTIONAL MATCH (d:Dispatch)-[:DISPATCH_OF]->(c)
DETACH DELETE d
WITH DISTINCT c
REMOVE c:Campaign
SET c:DeletedCampaign
// Its plain id is never handed to another tenant (domain/tenancy.py): a call that resolved it before
// this delete cannot land on a stranger's campaign.
FOREACH (_ IN CASE WHEN c.id = c.ref THEN [1] ELSE [] END |
  MERGE (r:RetiredCampaignId {id: c.id}) ON CREATE SET r.tenantId = c.tenantId)
