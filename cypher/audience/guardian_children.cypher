// explainRecipient: the members $profileId is a consenting guardian of ({{MEMBER}}: static or by the
// live segment), and on which channel each is excluded.
MATCH (c:Campaign {id: $campaignId})
MATCH (:Profile {profileId: $profileId})-[:GUARDIAN_OF {consent: 'granted'}]->(p:Profile)
WHERE {{MEMBER}}
RETURN p.profileId AS id, NOT {{CAMPAIGN_AGE_OK}} AS notify, NOT {{EMAIL_AGE_OK}} AS email
ORDER BY id
