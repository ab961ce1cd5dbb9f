// The profile a DID-auth DID signs in as (did/people.py): the one whose stored did it is, else the one
// its did:web alias names by profileId. Both are unique-index seeks.
OPTIONAL MATCH (byDid:Profile {did: $did})
OPTIONAL MATCH (byId:Profile {profileId: $aliasOf})
WITH coalesce(byDid, byId) AS p
WHERE p IS NOT NULL
RETURN p.profileId AS profileId, coalesce(p.tenants, []) AS tenants
