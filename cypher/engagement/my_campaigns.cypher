// getMyCampaigns for many callers at once (concurrent calls share one read): each caller's live,
// in-window in-app campaigns where the caller is a member and passes the campaign age policy now, with
// the caller's own engagement state. Each caller starts at one profile (unique seek) and expands its
// memberships, so cost grows with those memberships only. Cards (name, message) are cached by the
// caller keyed on (id, version), so the definition is not read here. Under a tenant's approval policy
// a campaign carries its approved revision (`shownVersion`, '' while none approved;
// campaigns/sending/approval_publish.py): the card is that revision's, shown to members added before
// its approval (`shownSince`) or enrolled by themselves. A few property reads per membership expanded.
// Each card's language is the campaign tenant's view of the caller over the shared locale
// (docs/people.md): a property of the view the age policy already bound, so it costs nothing more.
// replan=skip: an app call's plan seeks unique keys, which no statistic improves, and a replan under
// load stalls the process's calls behind its compile (test_hot_plans.py).
CYPHER replan=skip
UNWIND $profileIds AS profileId
MATCH (p:Profile {profileId: profileId})-[m:IN_CAMPAIGN_AUDIENCE]->(c:Campaign)
USING INDEX p:Profile(profileId)
WHERE c.status = 'live' AND c.hasInAppMessage
  AND {{CARD_SHOWN_TO_MEMBER}}
  AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
{{TENANT_VIEW}}
WITH profileId, p, c, view WHERE {{CAMPAIGN_AGE_OK}}
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
// One record per caller (not per membership): far fewer records for the driver to decode.
RETURN profileId,
       collect([c.id, coalesce(c.shownVersion, c.updatedAt), s {.*}, c.abTest,
                coalesce(view.locale, p.locale)]) AS visible
