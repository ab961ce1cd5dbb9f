// previewAudience: distinct resolved profiles that pass the campaign age policy now.
// {{CAMPAIGN_AGE_OK}} is replaced by graph/policy.py's predicate (one definition of the policy).
MATCH (c:Campaign {id: $campaignId})
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
WHERE {{CAMPAIGN_AGE_OK}}
RETURN count(DISTINCT p) AS count
