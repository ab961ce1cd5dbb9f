// Which of the given profiles a campaign's live segment matches now, passing its age policy,
// each with their state: the in-app side of a segment (getMyCampaigns' cards, recordEvent's check).
// Members are left out (the membership read serves them). {{SEGMENT_RULE}} is the compiled predicate over
// `p` (graph/rules/segment.py), its values parameters. One unique seek per profile and the rule over it, so
// the cost grows with the profiles asked about, never with the segment.
MATCH (c:Campaign {id: $campaignId}) USING INDEX c:Campaign(id)
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})
WHERE c.tenantId IN coalesce(p.tenants, []) AND NOT EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) }
  AND {{SEGMENT_RULE}}
{{TENANT_VIEW}}
WITH profileId, p, c, view WHERE {{CAMPAIGN_AGE_OK}}
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
RETURN profileId, coalesce(view.locale, p.locale) AS locale, s {.*} AS state
