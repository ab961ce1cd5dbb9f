// The public card fields of the given campaigns, for the card cache of getMyCampaigns: under an approval
// policy the approved revision's (`shown*`, campaigns/sending/approval_publish.py), keyed by its version.
MATCH (c:Campaign) WHERE c.id IN $campaignIds
RETURN c {.id, .startsAt, .endsAt, .messagePriority,
          updatedAt: coalesce(c.shownVersion, c.updatedAt),
          definition: {{SHOWN_DEFINITION}}} AS campaign
