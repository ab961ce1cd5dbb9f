// previewAudience: distinct resolved profiles that pass the campaign age policy now.
// {{AUDIENCE_AGE_OK}} is graph/rules/policy.py's predicate (one definition of the policy; with minors routed to
// guardians, the members it excludes are members too).
MATCH (c:Campaign {id: $campaignId})
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
WHERE {{AUDIENCE_AGE_OK}}
RETURN count(DISTINCT p) AS count
