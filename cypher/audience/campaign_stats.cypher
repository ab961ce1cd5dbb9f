// getStats: distinct-profile counts. Audience and enrolled count members that pass the age policy now
// (AUDIENCE_AGE_OK: with minors routed to guardians, the members it excludes too), each by the
// campaign tenant's view of them over the shared facts (TENANT_VIEW; docs/people.md);
// engagement counts come from CAMPAIGN_STATE only (self-tests live on CAMPAIGN_TEST and never count).
// bounced/complained are set by provider feedback on the send it names (cypher/feedback_link.cypher).
// capped: profiles the frequency cap held back on a channel (notify_cap, email_page) that have not
// received the campaign on that channel since. emailClicked: recipients whose tracked email CTA was
// followed (emailClickedAt, set once per recipient by campaigns/engagement/email_clicks.py).
// unsubscribed: recipients who opted out through this campaign's link (unsubscribedAt, set by
// cypher/unsubscribe/opt_out_campaign.cypher on the campaign's own tenant's opt-outs only). guardians:
// of notified and emailed, the guardians reached in place of excluded members (the walks mark
// their state notifyRouted / emailRouted, cypher/delivery/guardian_mark.cypher).
MATCH (c:Campaign {id: $campaignId})
CALL (c) {
  MATCH (p:Profile)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
  {{TENANT_VIEW}}
  WITH p, m, c, view WHERE {{AUDIENCE_AGE_OK}}
  RETURN count(DISTINCT p) AS audience,
         count(DISTINCT CASE WHEN m.selfEnrolled THEN p END) AS enrolled
}
CALL (c) {
  OPTIONAL MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(c)
  RETURN count(DISTINCT CASE WHEN s.shownCount > 0 THEN p END) AS shown,
         count(DISTINCT CASE WHEN s.clickedCount > 0 THEN p END) AS clicked,
         count(DISTINCT CASE WHEN s.dismissedCount > 0 THEN p END) AS dismissed,
         count(DISTINCT CASE WHEN s.notifiedAt IS NOT NULL THEN p END) AS notified,
         count(DISTINCT CASE WHEN s.emailedAt IS NOT NULL THEN p END) AS emailed,
         count(DISTINCT CASE WHEN s.bouncedAt IS NOT NULL THEN p END) AS bounced,
         count(DISTINCT CASE WHEN s.complainedAt IS NOT NULL THEN p END) AS complained,
         count(DISTINCT CASE WHEN s.emailClickedAt IS NOT NULL THEN p END) AS emailClicked,
         count(DISTINCT CASE WHEN s.unsubscribedAt IS NOT NULL THEN p END) AS unsubscribed,
         count(DISTINCT CASE WHEN (s.notifyCappedAt IS NOT NULL AND s.notifiedAt IS NULL)
                               OR (s.emailCappedAt IS NOT NULL AND s.emailedAt IS NULL) THEN p END) AS capped,
         count(DISTINCT CASE WHEN s.notifyRouted AND s.notifiedAt IS NOT NULL THEN p END) AS guardiansNotified,
         count(DISTINCT CASE WHEN s.emailRouted AND s.emailedAt IS NOT NULL THEN p END) AS guardiansEmailed
}
// variants: the same distinct-profile counts per A/B content variant, by the variantId stamped
// on the state at its first delivery or in-app event; emailClicked reads emailClickedAt (email clicks).
CALL (c) {
  OPTIONAL MATCH (p:Profile)-[s:CAMPAIGN_STATE]->(c)
  WHERE s.variantId IS NOT NULL
  WITH s.variantId AS id, p, s
  WITH id, count(DISTINCT p) AS recipients,
       count(DISTINCT CASE WHEN s.notifiedAt IS NOT NULL THEN p END) AS notified,
       count(DISTINCT CASE WHEN s.emailedAt IS NOT NULL THEN p END) AS emailed,
       count(DISTINCT CASE WHEN s.shownCount > 0 THEN p END) AS shown,
       count(DISTINCT CASE WHEN s.clickedCount > 0 THEN p END) AS clicked,
       count(DISTINCT CASE WHEN s.emailClickedAt IS NOT NULL THEN p END) AS emailClicked,
       count(DISTINCT CASE WHEN s.bouncedAt IS NOT NULL THEN p END) AS bounced,
       count(DISTINCT CASE WHEN s.complainedAt IS NOT NULL THEN p END) AS complained,
       count(DISTINCT CASE WHEN s.unsubscribedAt IS NOT NULL THEN p END) AS unsubscribed
  RETURN collect(CASE WHEN id IS NULL THEN null ELSE {id: id, recipients: recipients, notified: notified,
                 emailed: emailed, shown: shown, clicked: clicked, emailClicked: emailClicked,
                 bounced: bounced, complained: complained, unsubscribed: unsubscribed} END) AS variantRows
}
RETURN audience, enrolled, shown, clicked, dismissed, notified, emailed, bounced, complained, capped,
       emailClicked, unsubscribed, variantRows, c.abVariants AS abVariants, guardiansNotified, guardiansEmailed
