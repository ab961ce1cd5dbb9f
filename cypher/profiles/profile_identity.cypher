// The identity facts (`did`, `isServiceProfile`) of the batch's existing profiles, for the rule that a
// tenant credential sets them only on a profile it creates (docs/people.md). One unique seek per id.
UNWIND $ids AS id
MATCH (p:Profile {profileId: id})
RETURN p.profileId AS profileId, p.did AS did, coalesce(p.isServiceProfile, false) AS isServiceProfile
