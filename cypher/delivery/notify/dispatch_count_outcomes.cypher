
CYPHER replan=skip
UNWIND $counts AS k
MATCH (d:Dispatch {id: k.dispatchId})
WITH d, k WHERE k.batch IS NULL OR NOT k.batch IN coalesce(d.countedBatches, [])
SET d.acknowledged = d.acknowledged + k.acknowledged, d.rejected = d.rejected + k.rejected,
    d.suppressed = d.suppressed + k.suppressed,
    d.lastOutcomeAt = CASE WHEN coalesce(d.lastOutcomeAt, '') < k.at THEN k.at ELSE d.lastOutcomeAt END,
    d.countedBatches = CASE WHEN k.batch IS NULL THEN d.countedBatches
                            ELSE ([k.batch] + coalesce(d.countedBatches, []))[..{{COUNTED_BATCHES}}] END
