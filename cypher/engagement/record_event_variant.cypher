
UNWIND $stamps AS stamp
MATCH ()-[s:CAMPAIGN_STATE]->()
WHERE elementId(s) = stamp.stateId
SET s.variantId = coalesce(s.variantId, stamp.variantId)
