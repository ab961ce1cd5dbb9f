// After the receivers answered: notifiedAt for acknowledged ordinary deliveries, guarded by the
// campaign incarnation. $acks are sorted by profileId with each (profile, campaign) once: each row
// takes its profile lock (DESIGN.md) before it reads or creates the state, in ascending order, so
// batches cannot deadlock and "no state yet -> CREATE" cannot run twice for one profile. (Not MERGE:
// its locking variant also locks the campaign node, serialising every batch of the campaign, and it
// costs Neo4j about a third more CPU per row.) Returns, per dispatch, how many rows this write was the
// first to set notifiedAt for, so counters count first acknowledgements only; notifiedDispatchId names
// that dispatch, so the recheck of a redelivered job can tell a duplicate from a suppression. With $events
// (some tenant's endpoint takes recipient.notified) it also names those first profiles, for the event
// webhooks' outbox written in the same transaction. ack.variantId: the A/B content variant
// served, kept from the first delivery on (getStats.variants counts by it) (graph/webhook_outbox.py). replan=skip: as in
// notify_recheck, a plan of unique-key seeks that statistics cannot improve.
// Membership is read again under the lock: a person removed from the audience between the POST and its
// acknowledgement (removeAudience takes the same profile locks) gets no notifiedAt and is not counted;
// `removed` names them, for the worker's log. ack.standsIn: a segment page's or a routed guardian's job,
// whose standing is not a membership edge (the recheck before the POST held it).
CYPHER replan=skip
UNWIND $acks AS ack
MATCH (p:Profile {profileId: ack.profileId})
SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
WITH ack, p
MATCH (c:Campaign {id: ack.campaignId})
WHERE c.createdAt = ack.campaignCreatedAt
WITH ack, p, c, coalesce(ack.standsIn, false) OR EXISTS { (p)-[:IN_CAMPAIGN_AUDIENCE]->(c) } AS member
OPTIONAL MATCH (p)-[existing:CAMPAIGN_STATE]->(c)
CALL (p, c, existing, member) {
  WITH p, c, existing WHERE member AND existing IS NULL
  CREATE (p)-[s:CAMPAIGN_STATE]->(c)
  RETURN s
  UNION
  WITH existing WHERE member AND existing IS NOT NULL
  RETURN existing AS s
  UNION
  WITH member WHERE NOT member
  RETURN null AS s
}
WITH ack, c, s, member, s.notifiedAt IS NULL AS first
SET s.notifiedAt = coalesce(s.notifiedAt, $now),
    s.notifiedDispatchId = CASE WHEN first THEN ack.dispatchId ELSE s.notifiedDispatchId END,
    s.variantId = coalesce(s.variantId, ack.variantId)
WITH ack.dispatchId AS dispatchId, c.tenantId AS tenantId, coalesce(c.ref, c.id) AS campaignId,
     ack.profileId AS profileId, member AND first AS first, member
WHERE first OR NOT member
RETURN dispatchId, tenantId, campaignId, count(CASE WHEN first THEN 1 END) AS firsts,
       CASE WHEN $events THEN collect(CASE WHEN first THEN profileId END) ELSE [] END AS profiles,
       collect(CASE WHEN NOT member THEN profileId END) AS removed
