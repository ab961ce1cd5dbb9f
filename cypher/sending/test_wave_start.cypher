
MATCH (c:Campaign {id: $campaignId})
SET c.abTest = CASE WHEN $abTest IS NOT NULL THEN $abTest
                    WHEN c.abTest CONTAINS '"winner":null' THEN null ELSE c.abTest END
WITH c
UNWIND $dispatchIds AS dispatchId
MATCH (d:Dispatch {id: dispatchId})-[:DISPATCH_OF]->(c)
SET d.experiment = $experiment, d.phase = $phase, d.decideAt = $decideAt
