
CYPHER replan=skip
MATCH (c:Campaign {id: $campaignId})
RETURN c.createdAt = $createdAt AND c.status = 'live' AND 'notify' IN coalesce(c.channels, []) AS open
