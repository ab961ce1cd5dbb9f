// Email claims older than the horizon with no outcome: the worker that claimed them died between the
// claim and the record (docs/architecture.md "Email is at most one attempt"). They are never re-sent;
// here they become `uncertain` (reason claim_abandoned) and count once on their Dispatch, so an operator
// sees them (campaigns.listUncertainEmails). Profile locks first, ascending, then the claim is read
// again under the lock (a late record may have settled it meanwhile), then the Dispatch counters.
// Seeks campaign_state_email_outcome (emailOutcome, emailClaimedAt), pinned by a hint: on some statistics
// the planner preferred scanning profiles; at most $limit profiles per call.
MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(:Campaign)
USING INDEX s:CAMPAIGN_STATE(emailOutcome, emailClaimedAt)
WHERE s.emailOutcome = 'claimed' AND s.emailClaimedAt < $before
WITH DISTINCT p
ORDER BY p.profileId
LIMIT $limit
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH p
MATCH (p)-[s:CAMPAIGN_STATE]->(:Campaign)
WHERE s.emailOutcome = 'claimed' AND s.emailClaimedAt < $before
SET s.emailOutcome = 'uncertain', s.emailOutcomeReason = 'claim_abandoned', s.emailOutcomeAt = $now
WITH s.emailDispatchId AS dispatchId, count(*) AS n
ORDER BY dispatchId
OPTIONAL MATCH (d:Dispatch {id: dispatchId})
CALL (d, n) {
  WITH d, n
  WHERE d IS NOT NULL
  SET d.casLock = coalesce(d.casLock, 0) + 1, d.uncertain = coalesce(d.uncertain, 0) + n,
      d.lastError = 'uncertain: claim_abandoned (a worker stopped between claim and send; '
                    + 'see campaigns.listUncertainEmails)'
}
RETURN dispatchId, n
