
MATCH (c:Campaign {id: $campaignId})
SET c.abTest = $abTest
WITH c
UNWIND $dispatchIds AS dispatchId
MATCH (d:Dispatch {id: dispatchId})-[:DISPATCH_OF]->(c)
SET d.casLock = coalesce(d.casLock, 0) + 1
SET d.phase = 'rest', d.decision = $decision, d.winner = $winner, d.decidedBy = $decidedBy,
    d.decidedAt = $now,
    d.nextPageAt = CASE WHEN d.status = 'sending' AND d.cursor IS NULL THEN null ELSE d.nextPageAt END,
    d.passReadyAt = CASE WHEN d.passReadyAt > $now THEN $now ELSE d.passReadyAt END
RETURN d.id AS id, d.channel AS channel, d.status = 'sending' AND d.cursor IS NULL AS idle
