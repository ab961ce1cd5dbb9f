
MATCH (a:AuditEntry)
USING INDEX a:AuditEntry(campaignId, orderKey)
WHERE a.campaignId = $campaignId AND a.orderKey IS NOT NULL AND a.procedure IN $edits
  AND a.campaignCreatedAt = $createdAt
RETURN a.actor AS actor
ORDER BY a.campaignId DESC, a.orderKey DESC
LIMIT 1
