// An admin's email self-test: the admin's own email eligibility (contact, age, opt-out), ignoring the
// audience and the campaign status. Read-only: no CAMPAIGN_STATE, so no claim and no statistics. The
// admin's facts are the campaign tenant's view of them over the shared ones (TENANT_VIEW), as a send's.
MATCH (p:Profile {profileId: $profileId})
OPTIONAL MATCH (c:Campaign {id: $campaignId})
{{TENANT_VIEW}}
WITH p, view, {{PRIMARY_EMAILS}} AS emails
RETURN CASE
         WHEN {{EMAIL_OPTED_OUT}} THEN 'opted_out'
         WHEN NOT {{EMAIL_AGE_OK}} THEN 'age_policy'
         WHEN {{EMAIL_SUPPRESSED}} THEN 'suppressed'
         WHEN NOT {{EMAIL_CONTACT_OK}} THEN 'no_email'
         ELSE null
       END AS blocked,
       emails[0] AS address, coalesce(view.locale, p.locale) AS locale
