// suppressions.list: keyset page by address (unique index range seek, in index order), optional reason.
MATCH (s:EmailSuppression)
WHERE s.address > $cursor AND ($reason IS NULL OR s.reason = $reason)
RETURN s {.*} AS suppression
ORDER BY s.address
LIMIT $limit
