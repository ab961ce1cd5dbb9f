// leave, before lock_campaign: does the campaign exist, and is the caller self-enrolled in it? Only then is
// the campaign locked to remove the membership (leave.cypher).
MATCH (c:Campaign {id: $campaignId}) USING INDEX c:Campaign(id)
OPTIONAL MATCH (:Profile {profileId: $profileId})-[m:IN_CAMPAIGN_AUDIENCE]->(c)
RETURN coalesce(m.selfEnrolled, false) AS member
