
MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(c:Campaign {id: $campaignId})
WHERE s.variantId IS NOT NULL
  AND ((s.emailedAt IS NOT NULL AND s.emailDispatchId IN $dispatchIds)
       OR (s.notifiedAt IS NOT NULL AND s.notifiedDispatchId IN $dispatchIds))
RETURN p.profileId AS profileId, s.variantId AS variantId,
       s.emailedAt IS NOT NULL AND s.emailDispatchId IN $dispatchIds AS emailed,
       s.shownFirstAt IS NOT NULL AS shown, s.clickedFirstAt IS NOT NULL AS clicked,
       s.emailClickedAt IS NOT NULL AS emailClicked
