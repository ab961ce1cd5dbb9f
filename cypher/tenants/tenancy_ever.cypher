
OPTIONAL MATCH (live:Campaign {tenantId: $tenantId, ref: $ref})
OPTIONAL MATCH (other:Campaign {id: $ref}) WHERE other.tenantId <> $tenantId
OPTIONAL MATCH (retired:RetiredCampaignId {id: $ref}) WHERE retired.tenantId <> $tenantId
RETURN coalesce(live.id, CASE WHEN other IS NULL AND retired IS NULL THEN $ref ELSE $namespaced END) AS id
