
CYPHER replan=skip
OPTIONAL MATCH (d:Dispatch {id: $dispatchId})
OPTIONAL MATCH (c:Campaign {id: $campaignId})
OPTIONAL MATCH (x:EmailCooldown {provider: $provider})
RETURN d {.*} AS dispatch, c {.*} AS campaign, x.until AS cooldownUntil
