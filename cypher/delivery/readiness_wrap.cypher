
MATCH (d:Dispatch {id: $dispatchId})
SET d.pass = coalesce(d.pass, 1) + 1
