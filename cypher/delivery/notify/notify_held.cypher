// Rejected and suppressed deliveries, each recipient counted once per Dispatch however often the queue
// delivers its message (at-least-once: a copy rechecked away after a pause, a worker killed before its
// delete). The first count leaves a NOTIFY_COUNTED mark from the profile to the Dispatch; MERGE takes
// both nodes' locks, so two copies in flight at once cannot both be first. A mark made by this same write
// ($batch: a re-run after a cut-off commit) still counts here, and the Dispatch's countedBatches then
// keep the counter from adding it twice (delivery/notify/worker.py _COUNT). A profile that is gone cannot
// be marked and counts each time: its copies are rare and short-lived. $held is sorted by profileId
// (lock order) and holds each (profile, dispatch) once.
UNWIND $held AS h
MATCH (d:Dispatch {id: h.dispatchId})
OPTIONAL MATCH (p:Profile {profileId: h.profileId})
CALL (p, d, h) {
  WITH p, d, h WHERE p IS NOT NULL
  MERGE (p)-[c:NOTIFY_COUNTED]->(d)
    ON CREATE SET c.outcome = h.outcome, c.batch = $batch
  RETURN c.batch = $batch AS first
  UNION ALL
  WITH p WHERE p IS NULL
  RETURN true AS first
}
WITH h, first WHERE first
RETURN h.dispatchId AS dispatchId, h.outcome AS outcome, count(*) AS firsts
