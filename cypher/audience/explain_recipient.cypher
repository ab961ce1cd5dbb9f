// campaigns.explainRecipient: every eligibility fact about one profile and one campaign, computed with
// the same policy fragments the preview, the page walks and the rechecks use (graph/rules/policy.py), so an
// explanation cannot disagree with a send. Two unique seeks and one profile's relationships: the cost
// is independent of audience size. The verdicts are assembled in campaigns/audience/explain.py, in the order
// the walks apply them. The frequency cap is the claim's own fragment (EMAIL_CAP_REACHED) and its
// notify twin, with the campaign tenant's cap ($notifyCaps / $emailCaps from domain/frequency_cap.py).
// A profile outside the campaign's tenant is not found. Its facts are the campaign tenant's view over
// the shared ones, as the walks read them (TENANT_VIEW; docs/people.md).
MATCH (c:Campaign {id: $campaignId})
OPTIONAL MATCH (p:Profile {profileId: $profileId}) WHERE c.tenantId IN coalesce(p.tenants, [])
OPTIONAL MATCH (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
{{TENANT_VIEW}}
WITH c, p, m, s, view, {{PRIMARY_EMAILS}} AS emails,
     coalesce($notifyCaps[coalesce(c.tenantId, '*')], $notifyCaps['*']) AS cap
WITH c, p, m, s, view, emails, {{NOTIFY_CAP_REACHED}} AS notifyCapReached, cap AS notifyCap,
     coalesce($emailCaps[coalesce(c.tenantId, '*')], $emailCaps['*']) AS cap
WITH c, p, m, s, view, emails, notifyCapReached, notifyCap, {{EMAIL_CAP_REACHED}} AS emailCapReached, cap AS emailCap
RETURN c {.status, .channels, .startsAt, .endsAt, .excludeMinors, .definition, .abTest} AS campaign,
       coalesce(view.locale, p.locale) AS locale,
       p IS NOT NULL AS profileFound,
       m {.source, .addedAt, .selfEnrolled} AS membership,
       CASE WHEN p IS NULL THEN null ELSE {
         pushOptOut: {{PUSH_OPTED_OUT}},
         emailOptOut: {{EMAIL_OPTED_OUT}},
         campaignAgeOk: {{CAMPAIGN_AGE_OK}},
         emailAgeOk: {{EMAIL_AGE_OK}},
         emailContactOk: {{EMAIL_CONTACT_OK}},
         emailSuppressed: {{EMAIL_SUPPRESSED}},
         primaryEmails: size(emails),
         ownWebhook: coalesce(view.notificationsWebhook, p.notificationsWebhook) IS NOT NULL,
         notifyCapReached: coalesce(notifyCapReached, false),
         emailCapReached: coalesce(emailCapReached, false)
       } END AS profile,
       notifyCap, emailCap,
       s {.notifiedAt, .emailClaimedAt, .emailedAt, .emailOutcome, .emailOutcomeReason, .emailOutcomeAt,
          .bouncedAt, .complainedAt, .emailClickedAt, .unsubscribedAt, .shownFirstAt, .clickedFirstAt, .dismissedFirstAt,
          .notifyCappedAt, .emailCappedAt, .variantId} AS state
