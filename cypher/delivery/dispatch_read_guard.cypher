
CYPHER replan=skip
OPTIONAL MATCH (d:Dispatch {id: $dispatchId})
OPTIONAL MATCH (c:Campaign {id: $campaignId})
RETURN d {.*} AS dispatch, c {.*} AS campaign
