// A send or a change the approval policy held back, for a second publisher (campaigns/sending/approval.py):
// one request per campaign, preview and action; `created` says whether it is new (its event is raised once).
MATCH (c:Campaign {id: $campaignId})
MERGE (r:DispatchApprovalRequest {campaignId: $campaignId, previewToken: $previewToken, action: $action})
ON CREATE SET r.tenantId = c.tenantId, r.requestedBy = $requestedBy, r.requestedAt = $requestedAt,
              r.recipients = $recipients, r.revision = $revision, r.fresh = true,
              r.acceptFallback = $acceptFallback, r.untranslated = $untranslated,
              r.shownToken = $shownToken
// The deadline the requester asked (deliverBy, acceptLate): the approval pins it unless told otherwise.
SET r.deliverBy = $deliverBy, r.acceptLate = $acceptLate
WITH c, r, coalesce(r.fresh, false) AS created
REMOVE r.fresh
RETURN created, c {.id, .ref, .tenantId} AS campaign, coalesce(r.requestedAt, $requestedAt) AS at
