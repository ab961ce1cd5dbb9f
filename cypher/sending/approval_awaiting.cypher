// A tenant's open approval requests, newest first, each with the campaign's latest approval if one was
// given, for its own preview or a newer one (campaigns/sending/approval.py: the send that uses the
// approval closes the requests). A `publish` request also reads the draft and the revision shown, for
// the differences the approver sees.
MATCH (r:DispatchApprovalRequest {tenantId: $tenantId})
MATCH (c:Campaign {id: r.campaignId})
CALL (r) {
  OPTIONAL MATCH (x:DispatchApproval {campaignId: r.campaignId})
  RETURN x ORDER BY x.approvedAt DESC LIMIT 1
}
RETURN c.id AS campaignId, c.createdAt AS createdAt, c.name AS name, r.action AS action,
       r.previewToken AS previewToken, r.recipients AS recipients, r.requestedBy AS requestedBy,
       r.requestedAt AS requestedAt, c.revision <> r.revision AS changedSince,
       r.untranslated AS untranslated, r.acceptFallback AS acceptFallback, r.deliverBy AS deliverBy,
       coalesce(r.acceptLate, false) AS acceptLate,
       x.approvedBy AS approvedBy, x.approvedAt AS approvedAt, x.previewToken AS approvedPreviewToken,
       CASE WHEN r.action = 'publish' THEN c.definition END AS draft,
       CASE WHEN r.action = 'publish' THEN c.shownDefinition END AS shown
ORDER BY r.requestedAt DESC
LIMIT 200
