// sendTestToMe's in-app snapshot language: the campaign tenant's view of the admin over the shared locale
// (TENANT_VIEW; docs/people.md), as the card a member of that tenant would read. Two unique seeks.
MATCH (p:Profile {profileId: $profileId})
OPTIONAL MATCH (c:Campaign {id: $campaignId})
{{TENANT_VIEW}}
RETURN coalesce(view.locale, p.locale) AS locale
