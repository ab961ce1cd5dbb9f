// The web view of an email: its reader's language is the campaign tenant's view of them over the shared
// locale (TENANT_VIEW; docs/people.md), the language their email was sent in.
OPTIONAL MATCH (p:Profile {campaignUnsubscribeId: $unsubscribeId})
OPTIONAL MATCH (c:Campaign {id: $campaignId})
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
{{TENANT_VIEW}}
RETURN coalesce(view.locale, p.locale) AS locale, p.profileId AS profileId,
       CASE WHEN c IS NULL THEN null ELSE c {.*} END AS campaign, coalesce(s.emailRouted, false) AS routed
