// An approval of exactly one preview: who, when, what it showed (recipients, reach per walked channel)
// whether it accepted the fallback readers, and the deadline it pinned (campaigns/sending/approve.py).
MERGE (x:DispatchApproval {campaignId: $campaignId, previewToken: $previewToken})
SET x.approvedBy = $approver, x.approvedAt = $now, x.recipients = $recipients,
    x.acceptFallback = $acceptFallback, x.reach = $reach, x.deliverBy = $deliverBy, x.acceptLate = $acceptLate
RETURN x {.*} AS approval
