
MERGE (x:DispatchApproval {campaignId: $campaignId, previewToken: $previewToken})
SET x.approvedBy = $approver, x.approvedAt = $now, x.recipients = $recipients
RETURN x {.*} AS approval
