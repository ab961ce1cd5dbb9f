// previewAudience: distinct resolved profiles that pass the campaign age policy now.
// {{AUDIENCE_AGE_OK}} is graph/rules/policy.py's predicate (one definition of the policy; with minors routed to
// guardians, the members it excludes are members too), over the campaign tenant's view of each person
// (TENANT_VIEW; docs/people.md).
MATCH (c:Campaign {id: $campaignId})
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
{{TENANT_VIEW}}
WITH p, c, view WHERE {{AUDIENCE_AGE_OK}}
RETURN count(DISTINCT p) AS count
