// Count a soft bounce per address (rows sorted by address): only the times inside the window are kept
// (at most $limit of them), and the addresses that reached $limit are returned for suppression.
UNWIND $rows AS row
MERGE (b:EmailSoftBounces {address: row.address})
WITH b, row, [t IN coalesce(b.times, []) WHERE t > $windowStart] + [$now] AS times
SET b.times = times[-$limit..]
WITH row, size(times) >= $limit AS reached
WHERE reached
RETURN row.address AS address, row.detail AS detail
