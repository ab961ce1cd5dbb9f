
UNWIND $counts AS k
MATCH (d:Dispatch {id: k.dispatchId})
SET d.capped = coalesce(d.capped, 0) + k.capped
