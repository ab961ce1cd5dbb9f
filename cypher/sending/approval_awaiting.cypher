
MATCH (r:DispatchApprovalRequest {tenantId: $tenantId})
MATCH (c:Campaign {id: r.campaignId})
WHERE NOT EXISTS { (:DispatchApproval {campaignId: r.campaignId, previewToken: r.previewToken}) }
RETURN c.id AS campaignId, c.name AS name, r.previewToken AS previewToken, r.recipients AS recipients,
       r.requestedBy AS requestedBy, r.requestedAt AS requestedAt, c.revision <> r.revision AS changedSince
ORDER BY r.requestedAt DESC
LIMIT 200
