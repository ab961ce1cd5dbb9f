// One audit entry per admin call, written inside the mutation's own transaction (graph/audit.py).
// MERGE on the id drawn before the transaction: a driver retry, or a later transaction of the same
// call (an audience change of many chunks), finds the entry and updates what changed since.
MERGE (a:AuditEntry {id: $id})
ON CREATE SET a.at = $at, a.orderKey = $at + '|' + $id, a.actor = $actor, a.via = $via, a.tenantId = $tenantId, a.procedure = $procedure, a.requestId = $requestId,
              a.targetType = $targetType, a.targetId = $targetId, a.campaignId = $campaignId,
              a.campaignCreatedAt = $campaignCreatedAt, a.revisionBefore = $revisionBefore
SET a.revisionAfter = $revisionAfter, a.detail = $detail
