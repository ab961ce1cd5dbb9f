// The email clicks a ClickRecorder batch holds (campaigns/engagement/email_clicks.py), after the profile locks: one
// row per (recipient, campaign incarnation), its first click time and how many clicks it holds. The
// profile is found by its campaignUnsubscribeId (unique constraint seek), then its own CAMPAIGN_STATE to
// that campaign id and incarnation (the planner expands the profile's states: a recipient's campaign
// history, as the claim reads it); a recipient without state for that incarnation is no row. emailClickedAt
// keeps the earliest click ever recorded; a row whose batch id is already on the state is a re-run of a
// commit that landed (Graph.write_idempotent) and adds nothing. `first`: this row set emailClickedAt.
UNWIND $clicks AS click
MATCH (p:Profile {campaignUnsubscribeId: click.unsubscribeId})
MATCH (c:Campaign {id: click.campaignId})
WHERE c.createdAt = click.campaignCreatedAt
MATCH (p)-[s:CAMPAIGN_STATE]->(c)
WITH click, p, c, s, s.emailClickedAt IS NULL AS first, coalesce(s.emailClickBatch, '') = $batchId AS rerun
SET s.emailClickedAt = CASE WHEN first OR click.at < s.emailClickedAt THEN click.at ELSE s.emailClickedAt END,
    s.emailClickCount = coalesce(s.emailClickCount, 0) + CASE WHEN rerun THEN 0 ELSE click.count END,
    s.emailClickBatch = $batchId
RETURN first AND NOT rerun AS first, p.profileId AS profileId, coalesce(c.ref, c.id) AS campaignId,
       c.tenantId AS tenantId, s.emailDispatchId AS dispatchId, s.emailClickedAt AS clickedAt
