
MATCH (c:Campaign {id: $campaignId})
UNWIND $dispatches AS row
CREATE (d:Dispatch {id: row.id, scheduleId: $scheduleId, channel: row.channel, status: 'scheduled',
                    sendAt: $sendAt, sendLocalTime: $sendLocalTime, maxLateSeconds: $maxLateSeconds,
                    onChange: $onChange, acceptFallback: $acceptFallback, experiment: $experiment,
                    previewToken: $token, scheduledAt: $now, approvedBy: $approvedBy,
                    approvedAt: $approvedAt, reachCap: row.reachCap, cursor: null, pages: 0, enqueued: 0,
                    acknowledged: 0, rejected: 0, suppressed: 0, emailed: 0, throttled: 0, uncertain: 0,
                    lastProgressAt: $now, campaignCreatedAt: c.createdAt})-[:DISPATCH_OF]->(c)
SET d += row.deadline
RETURN d {.*, campaignId: c.id} AS dispatch
ORDER BY d.channel DESC
