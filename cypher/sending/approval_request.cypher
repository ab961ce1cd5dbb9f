
MATCH (c:Campaign {id: $campaignId})
MERGE (r:DispatchApprovalRequest {campaignId: $campaignId, previewToken: $previewToken})
ON CREATE SET r.tenantId = c.tenantId, r.requestedBy = $requestedBy, r.requestedAt = $requestedAt,
              r.recipients = $recipients, r.revision = $revision
