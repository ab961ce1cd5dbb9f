
MATCH (old:Dispatch)-[:DISPATCH_OF]->(:Campaign {id: $campaignId})
WHERE old.status IN ['sending', 'paused']  // a paused one (health guard) is superseded too
SET old.status = 'stopped', old.lastError = 'superseded', old.finishedAt = $now
