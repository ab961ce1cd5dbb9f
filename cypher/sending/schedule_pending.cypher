
MATCH (d:Dispatch {status: 'scheduled'})-[:DISPATCH_OF]->(:Campaign {id: $campaignId})
RETURN d.id AS id LIMIT 1
