// recordEvent for a batch of events, each profile's lock taken first: the batch's first statement locks
// all its profiles ($lockIds, ascending, as graph/locks.py's lock_profiles does; a later statement of the
// transaction passes none), in a unit subquery that runs to its end before any event is read, so a
// batch is one round trip before its commit. The profile lock serialises every device of a profile,
// so "no state yet -> CREATE" cannot run twice and no increment is lost. (Not MERGE: its locking
// variant also locks the campaign node, serialising every recipient's events.) The caller passes each
// (profile, campaign) pair at most once per run, so no row can miss a state another row of the same
// statement created. {{EVENT}} is one of
// shown|clicked|dismissed (a closed set checked in Python before substitution).
// `variants`: the campaign's A/B variant ids and weights, so the caller stamps the state's
// variantId on a profile's first event (campaigns/engagement/service.py), in this transaction.
// Two unique seeks per event, then the membership check as Expand(Into): cost is independent of
// audience size. A live segment's recipient has no membership; someone the campaign was
// notified or emailed to may record engagement too (one more Expand(Into), for non-members only), so a
// follow-up's `engaged` rule sees what they did; so may a profile the live segment matches now, which the
// caller checked for the events this statement refused (`segmentMatched`, campaigns/engagement/segment_reach.py).
// A member records only on the card they see: under an approval policy the approved revision's, as in
// my_campaigns (none while it awaits approval; none for a member added since).
// replan=skip: an app call's plan seeks unique keys, which no statistic improves, and a replan under
// load stalls the process's calls behind its compile (test_hot_plans.py).
CYPHER replan=skip
CALL () {
  UNWIND $lockIds AS lockId
  MATCH (locked:Profile {profileId: lockId})
  SET locked.campaignStateLock = coalesce(locked.campaignStateLock, 0) + 1
}
UNWIND $events AS event
MATCH (p:Profile {profileId: event.profileId})
MATCH (c:Campaign {id: event.campaignId}) USING INDEX c:Campaign(id)
WHERE c.status = 'live'
  AND (event.segmentMatched
       OR EXISTS { (p)-[m:IN_CAMPAIGN_AUDIENCE]->(c)
                   WHERE {{CARD_SHOWN_TO_MEMBER}} }
       OR EXISTS { (p)-[r:CAMPAIGN_STATE]->(c) WHERE r.notifiedAt IS NOT NULL OR r.emailedAt IS NOT NULL })
  AND (c.startsAt IS NULL OR c.startsAt <= $now) AND (c.endsAt IS NULL OR $now < c.endsAt)
{{TENANT_VIEW}}
WITH event, p, c, view WHERE {{CAMPAIGN_AGE_OK}}
OPTIONAL MATCH (p)-[existing:CAMPAIGN_STATE]->(c)
CALL (p, c, existing) {
  WITH p, c, existing WHERE existing IS NULL
  CREATE (p)-[s:CAMPAIGN_STATE]->(c)
  RETURN s
  UNION
  WITH existing WHERE existing IS NOT NULL
  RETURN existing AS s
}
SET s.{{EVENT}}FirstAt = coalesce(s.{{EVENT}}FirstAt, $now),
    s.{{EVENT}}LastAt = $now,
    s.{{EVENT}}Count = coalesce(s.{{EVENT}}Count, 0) + 1,
    s.lastActionId = coalesce(event.actionId, s.lastActionId)
RETURN event.index AS index, s {.*} AS state, elementId(s) AS stateId, c.abVariants AS variants,
       c.abTest AS abTest
