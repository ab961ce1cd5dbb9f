
MATCH (d:Dispatch)
WHERE d.status IN $statuses
RETURN d.channel AS channel, d.status AS status, count(*) AS n
