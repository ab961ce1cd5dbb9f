MATCH (c:Campaign {id: $campaignId})
UNWIND $chosen AS chosenId
MATCH (p:Profile {profileId: chosenId})
WITH p, c