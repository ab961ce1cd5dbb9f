
CALL () {
  MATCH (:DeletedCampaign)-[r]-()
  WITH r LIMIT $limit
  DELETE r
  RETURN count(r) AS removed
}
CALL () {
  MATCH (t:DeletedCampaign) WHERE NOT EXISTS { (t)--() }
  DELETE t
  RETURN count(t) AS dropped
}
RETURN removed, dropped
