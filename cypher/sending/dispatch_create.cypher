
MATCH (c:Campaign {id: $campaignId})
SET c.revision = c.revision + 1
WITH c
UNWIND $dispatches AS row
CREATE (d:Dispatch {id: row.id, channel: row.channel, status: 'sending', cursor: null, pages: 0,
                    enqueued: 0, acknowledged: 0, rejected: 0, suppressed: 0, emailed: 0, throttled: 0,
                    uncertain: 0, startedAt: $now, lastProgressAt: $now, approvedBy: $approvedBy,
                    approvedAt: $approvedAt, reachCap: row.reachCap, campaignCreatedAt: c.createdAt})-[:DISPATCH_OF]->(c)
SET d += row.plan
RETURN DISTINCT c.createdAt AS createdAt
