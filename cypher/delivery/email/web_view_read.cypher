
OPTIONAL MATCH (p:Profile {campaignUnsubscribeId: $unsubscribeId})
OPTIONAL MATCH (c:Campaign {id: $campaignId})
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
RETURN p.locale AS locale, p.profileId AS profileId,
       CASE WHEN c IS NULL THEN null ELSE c {.*} END AS campaign, coalesce(s.emailRouted, false) AS routed
