// campaigns.explainRecipient: every eligibility fact about one profile and one campaign, computed with
// the same policy fragments the preview, the page walks and the rechecks use (graph/policy.py), so an
// explanation cannot disagree with a send. Two unique seeks and one profile's relationships: the cost
// is independent of audience size. The verdicts are assembled in campaigns/explain.py, in the order
// the walks apply them.
MATCH (c:Campaign {id: $campaignId})
OPTIONAL MATCH (p:Profile {profileId: $profileId})
OPTIONAL MATCH (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
WITH c, p, m, s, {{PRIMARY_EMAILS}} AS emails
RETURN c {.status, .channels, .startsAt, .endsAt, .excludeMinors} AS campaign,
       p IS NOT NULL AS profileFound,
       m {.source, .addedAt, .selfEnrolled} AS membership,
       CASE WHEN p IS NULL THEN null ELSE {
         pushOptOut: coalesce(p.announcementPushOptOut, false),
         emailOptOut: coalesce(p.announcementEmailOptOut, false),
         campaignAgeOk: {{CAMPAIGN_AGE_OK}},
         emailAgeOk: {{EMAIL_AGE_OK}},
         emailContactOk: {{EMAIL_CONTACT_OK}},
         emailSuppressed: {{EMAIL_SUPPRESSED}},
         primaryEmails: size(emails),
         ownWebhook: p.notificationsWebhook IS NOT NULL
       } END AS profile,
       s {.notifiedAt, .emailClaimedAt, .emailedAt, .emailOutcome, .emailOutcomeReason, .emailOutcomeAt,
          .bouncedAt, .complainedAt, .shownFirstAt, .clickedFirstAt, .dismissedFirstAt} AS state
