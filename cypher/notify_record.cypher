// After the receivers answered: notifiedAt for acknowledged ordinary deliveries (profiles already
// locked in ascending order by the caller), guarded by the campaign incarnation. Returns the ids whose
// notifiedAt this write set, so counters count first acknowledgements only.
UNWIND $acks AS ack
MATCH (p:Profile {profileId: ack.profileId})
MATCH (c:Campaign {id: ack.campaignId})
WHERE c.createdAt = ack.campaignCreatedAt
MERGE (p)-[s:CAMPAIGN_STATE]->(c)
WITH ack, s, s.notifiedAt IS NULL AS first
SET s.notifiedAt = coalesce(s.notifiedAt, $now)
RETURN ack.dispatchId AS dispatchId, first
