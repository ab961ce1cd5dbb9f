
MATCH (x:DispatchApproval {campaignId: $campaignId})
RETURN x {.*} AS approval
ORDER BY x.approvedAt DESC
