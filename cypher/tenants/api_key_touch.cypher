
MATCH (k:ApiKey {id: $id}) WHERE k.lastUsedAt IS NULL OR k.lastUsedAt < $staleBefore
SET k.lastUsedAt = $now
