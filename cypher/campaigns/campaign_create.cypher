
OPTIONAL MATCH (mine:Campaign {tenantId: $tenantId, ref: $ref})
OPTIONAL MATCH (taken:Campaign {id: $ref})
OPTIONAL MATCH (retired:RetiredCampaignId {id: $ref})
WITH mine, taken IS NULL AND coalesce(retired.tenantId = $tenantId, true) AS plainFree
CALL (mine, plainFree) {
  WITH mine, plainFree WHERE mine IS NULL
  CREATE (c:Campaign {id: CASE WHEN plainFree THEN $ref ELSE $namespaced END, ref: $ref,
                      status: 'draft', tenantId: $tenantId, createdAt: $now, updatedAt: $now, revision: 1,
                      campaignStateLock: 0})
  SET c += $props
  RETURN c {.*} AS campaign
}
RETURN campaign
