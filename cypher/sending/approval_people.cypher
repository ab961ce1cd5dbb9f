// Who changed a campaign incarnation's content or audience, and the sends that went out approved,
// newest first (campaigns/sending/approval_people.py walks back to the last approved send).
MATCH (a:AuditEntry)
USING INDEX a:AuditEntry(campaignId, orderKey)
WHERE a.campaignId = $campaignId AND a.orderKey IS NOT NULL AND a.procedure IN $procedures
  AND a.campaignCreatedAt = $createdAt
RETURN a.actor AS actor, a.procedure AS procedure, a.detail AS detail
ORDER BY a.campaignId DESC, a.orderKey DESC
LIMIT $limit
