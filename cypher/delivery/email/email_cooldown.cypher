
MERGE (x:EmailCooldown {provider: $provider})
SET x.until = CASE WHEN x.until IS NULL OR x.until < $until THEN $until ELSE x.until END,
    x.lastReason = $reason, x.updatedAt = $now
