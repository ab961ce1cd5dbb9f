UNWIND $routed AS routed
MATCH (p:Profile {profileId: routed[0]})
MATCH (c:Campaign {id: $campaignId})
WHERE EXISTS {
  MATCH (p)-[:GUARDIAN_OF {consent: 'granted'}]->(child:Profile) WHERE child.profileId IN routed[1]
}
WITH p, c