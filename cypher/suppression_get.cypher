MATCH (s:EmailSuppression {address: $address})
RETURN s {.*} AS suppression
