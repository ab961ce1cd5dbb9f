
UNWIND $unsubscribeIds AS unsubscribeId
MATCH (p:Profile {campaignUnsubscribeId: unsubscribeId})
RETURN p.profileId AS profileId
