// getAudience of a campaign with a live segment: one keyset page of its static members and
// the segment's current matches, each passing the campaign age policy, in profileId order. The
// AUDIENCE_PAGE placeholder is graph/rules/segment.py's union (the audience_member seek beside the
// segment's own seeks, the age rule applied in each before its LIMIT); never SKIP. `member`: a static
// membership (one expansion of each row of the page), else a match of the rule only.
{{AUDIENCE_PAGE}}
RETURN p.profileId AS profileId, p.did AS did, EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) } AS member
