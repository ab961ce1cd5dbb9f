// recordEvent's live-segment check (campaigns/engagement/segment_reach.py): the campaigns of refused
// events that show an in-app card to a live segment, with the rule of the revision members see. Under
// an approval policy that is the approved revision (`shown*`, as in my_campaigns' segmentCampaigns),
// none while unapproved.
UNWIND $campaignIds AS campaignId
MATCH (c:Campaign {id: campaignId}) USING INDEX c:Campaign(id)
WHERE c.hasSegment AND c.hasInAppMessage AND {{CARD_APPROVED}}
RETURN c {.id, .ref, .tenantId, updatedAt: coalesce(c.shownVersion, c.updatedAt),
          definition: {{SHOWN_DEFINITION}}} AS campaign
