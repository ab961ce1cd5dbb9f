// enroll, before lock_campaign: may this profile enrol in this campaign at all? A refusal then takes no
// lock, so whoever asks about campaigns they may not join cannot queue up behind an admin's audience change.
MATCH (c:Campaign {id: $campaignId}) USING INDEX c:Campaign(id)
MATCH (p:Profile {profileId: $profileId})
{{TENANT_VIEW}}
WITH c, p, view WHERE {{SELF_ENROLLABLE}}
RETURN count(*) > 0 AS eligible
