// Dispatches with a deadline of the last $since.. that have not yet fallen behind it
// (campaigns/sending/deadline_watch.py), by the index dispatch_deliver_by: a walk that completed still
// counts while its receivers answer, so 'completed' is read too, never the whole status.
MATCH (d:Dispatch)
WHERE d.deliverByAt >= $since AND d.lateAt IS NULL AND d.status IN ['sending', 'completed']
  AND d.planFinishesAt IS NOT NULL
RETURN d {.*} AS dispatch
ORDER BY d.deliverByAt
LIMIT $limit
