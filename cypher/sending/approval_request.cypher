// A send the approval policy held back, for a second publisher (campaigns/sending/approval.py).
MATCH (c:Campaign {id: $campaignId})
MERGE (r:DispatchApprovalRequest {campaignId: $campaignId, previewToken: $previewToken})
ON CREATE SET r.tenantId = c.tenantId, r.requestedBy = $requestedBy, r.requestedAt = $requestedAt,
              r.recipients = $recipients, r.revision = $revision, r.action = $action,
              r.acceptFallback = $acceptFallback, r.untranslated = $untranslated
