// Resolve explicit identifiers. Each item names a profile by stored did and/or by profileId (a plain
// profileId, or the one a did:web alias decodes to); both lookups are unique-index seeks.
UNWIND $items AS item
OPTIONAL MATCH (byDid:Profile {did: item.did})
OPTIONAL MATCH (byId:Profile {profileId: item.profileId})
RETURN item.input AS input, byDid.profileId AS viaDid, byId.profileId AS viaId
