
MATCH (p:Profile {profileId: $profileId})
RETURN coalesce(p.announcementEmailOptOut, false) AS email,
       coalesce(p.announcementPushOptOut, false) AS push
