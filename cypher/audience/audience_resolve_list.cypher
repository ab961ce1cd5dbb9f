// Resolve explicit identifiers. Each item names a profile by stored did and/or by profileId (a plain
// profileId, or the one a did:web alias decodes to); both lookups are unique-index seeks. One record
// for the whole list (collect skips nulls): 10,000 records would cost the driver more than the seeks.
// Only members of the campaign's tenant are found; anyone else is missing, as if they did not exist.
UNWIND $items AS item
OPTIONAL MATCH (byDid:Profile {did: item.did}) WHERE $tenant IN byDid.tenants
OPTIONAL MATCH (byId:Profile {profileId: item.profileId}) WHERE $tenant IN byId.tenants
RETURN collect(byDid.profileId) + collect(byId.profileId) AS found,
       collect(CASE WHEN byDid IS NULL AND byId IS NULL THEN item.input END) AS missing
