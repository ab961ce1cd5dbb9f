// The public card fields of the given campaigns, for the card cache of getMyCampaigns.
MATCH (c:Campaign) WHERE c.id IN $campaignIds
RETURN c {.id, .updatedAt, .definition, .startsAt, .endsAt, .messagePriority} AS campaign
