// An approval of exactly one preview: who, when, what it showed (recipients, reach per walked channel)
// and whether it accepted the fallback readers (campaigns/sending/approve.py).
MERGE (x:DispatchApproval {campaignId: $campaignId, previewToken: $previewToken})
SET x.approvedBy = $approver, x.approvedAt = $now, x.recipients = $recipients,
    x.acceptFallback = $acceptFallback, x.reach = $reach
RETURN x {.*} AS approval
