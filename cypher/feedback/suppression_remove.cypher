// Lift suppressions (a provider's reactivation, or suppressions.remove): the suppression and its soft
// bounce count go, so a later soft bounce starts counting afresh. Profile opt-outs stay: they are the
// person's choice, not the address's state.
UNWIND $addresses AS address
OPTIONAL MATCH (s:EmailSuppression {address: address})
OPTIONAL MATCH (b:EmailSoftBounces {address: address})
WITH collect(s) AS suppressions, collect(b) AS counts
FOREACH (n IN suppressions + counts | DETACH DELETE n)
RETURN size(suppressions) AS removed
