// Constraints and indexes for every key a hot path looks up. Every statement is idempotent.
// Neo4j Community has uniqueness constraints but no existence/key constraints: code enforces those.
CREATE CONSTRAINT profile_id IF NOT EXISTS FOR (p:Profile) REQUIRE p.profileId IS UNIQUE;
CREATE CONSTRAINT profile_did IF NOT EXISTS FOR (p:Profile) REQUIRE p.did IS UNIQUE;
CREATE CONSTRAINT profile_unsubscribe_id IF NOT EXISTS FOR (p:Profile) REQUIRE p.campaignUnsubscribeId IS UNIQUE;
// A tenant's view of a person (docs/people.md): at most one per tenant and person.
CREATE CONSTRAINT tenant_view_key IF NOT EXISTS FOR (v:TenantView) REQUIRE (v.tenantId, v.profileId) IS UNIQUE;
CREATE CONSTRAINT campaign_id IF NOT EXISTS FOR (c:Campaign) REQUIRE c.id IS UNIQUE;
// A tenant's campaigns by the id it knows them by (domain/tenancy.py): admin calls resolve through it,
// campaigns.list seeks and orders by it. A storage id once held is never given to another tenant.
CREATE CONSTRAINT campaign_tenant_ref IF NOT EXISTS FOR (c:Campaign) REQUIRE (c.tenantId, c.ref) IS UNIQUE;
CREATE CONSTRAINT retired_campaign_id IF NOT EXISTS FOR (r:RetiredCampaignId) REQUIRE r.id IS UNIQUE;
// Role grants (campaigns/tenants/access_grants.py): every admin call reads its caller's by (tenantId, subject).
// Two-person approval (campaigns/sending/approval.py): approvals and requests by campaign, requests by tenant.
CREATE INDEX dispatch_approval_campaign IF NOT EXISTS FOR (x:DispatchApproval) ON (x.campaignId);
CREATE INDEX dispatch_approval_request_campaign IF NOT EXISTS FOR (r:DispatchApprovalRequest) ON (r.campaignId);
CREATE INDEX dispatch_approval_request_tenant IF NOT EXISTS FOR (r:DispatchApprovalRequest) ON (r.tenantId);
// API keys by id (campaigns/tenants/api_keys.py): every call made with one reads its record; a tenant's are listed.
CREATE CONSTRAINT api_key_id IF NOT EXISTS FOR (k:ApiKey) REQUIRE k.id IS UNIQUE;
CREATE INDEX api_key_tenant IF NOT EXISTS FOR (k:ApiKey) ON (k.tenantId);
CREATE CONSTRAINT access_grant_key IF NOT EXISTS FOR (g:AccessGrant) REQUIRE (g.tenantId, g.subject, g.role) IS UNIQUE;
// The tenants a person holds roles in (access.me): the console offers them to act in.
CREATE INDEX access_grant_subject IF NOT EXISTS FOR (g:AccessGrant) ON (g.subject);
CREATE CONSTRAINT dispatch_id IF NOT EXISTS FOR (d:Dispatch) REQUIRE d.id IS UNIQUE;
CREATE CONSTRAINT tag_slug IF NOT EXISTS FOR (t:Tag) REQUIRE t.slug IS UNIQUE;
CREATE CONSTRAINT rate_bucket_key IF NOT EXISTS FOR (b:RateBucket) REQUIRE b.key IS UNIQUE;
CREATE INDEX contact_method_value IF NOT EXISTS FOR (m:ContactMethod) ON (m.type, m.value);
CREATE INDEX campaign_status IF NOT EXISTS FOR (c:Campaign) ON (c.status);
// getMyCampaigns reads the live campaigns with a segment on every call (my_campaigns' segmentCampaigns): a seek of
// those alone, not of every live campaign, so a call costs what the segments cost, not the deployment.
CREATE INDEX campaign_status_segment IF NOT EXISTS FOR (c:Campaign) ON (c.status, c.hasSegment);
CREATE INDEX dispatch_status IF NOT EXISTS FOR (d:Dispatch) ON (d.status);
// The forecast's measured rate reads the newest finished Dispatches of a channel (sending/plan_rates).
CREATE INDEX dispatch_channel_finished IF NOT EXISTS FOR (d:Dispatch) ON (d.channel, d.finishedAt);
// The deadline watch reads the Dispatches whose deliverBy is recent (sending/deadline_due).
CREATE INDEX dispatch_deliver_by IF NOT EXISTS FOR (d:Dispatch) ON (d.deliverByAt);
// Audience pages (getAudience, dispatch pages) seek and order memberships by (campaignId, profileId).
CREATE INDEX audience_member IF NOT EXISTS FOR ()-[m:IN_CAMPAIGN_AUDIENCE]-() ON (m.campaignId, m.profileId);
// A live segment's tag seek (graph/rules/segment.py) reads a tag's profiles in profileId order after a cursor,
// as audience pages read memberships: the slug and profileId are copied onto HAS_TAG by its one writer
// (upsert_profiles.cypher; graph/schema.py backfills older links).
CREATE INDEX tag_member IF NOT EXISTS FOR ()-[g:HAS_TAG]-() ON (g.slug, g.profileId);
// A tenant's own tags (docs/people.md: HAS_TAG with its tenantId): the tag source's page seeks that
// tenant's edges of a tag in profileId order, never another tenant's (a shared edge has no tenantId, so
// this index holds none of them: the page reads those from tag_member).
CREATE INDEX tag_member_tenant IF NOT EXISTS FOR ()-[g:HAS_TAG]-() ON (g.tenantId, g.slug, g.profileId);
// The rate limiter sweeps expired per-minute buckets through this index.
CREATE INDEX rate_bucket_expires IF NOT EXISTS FOR (b:RateBucket) ON (b.expiresAt);
// Email claims by outcome: those without one past the horizon (the sweeper counts them uncertain),
// and the uncertain ones an operator lists (campaigns.listUncertainEmails).
CREATE INDEX campaign_state_email_outcome IF NOT EXISTS FOR ()-[s:CAMPAIGN_STATE]-() ON (s.emailOutcome, s.emailClaimedAt);
// One provider-wide email cooldown per provider: every email page reads it before claiming.
CREATE CONSTRAINT email_cooldown_provider IF NOT EXISTS FOR (x:EmailCooldown) REQUIRE x.provider IS UNIQUE;
// Provider feedback: a suppression per normalized address (the email eligibility rule seeks it), soft
// bounce counts, processed webhook records (idempotent retries), and sends found by provider message id.
CREATE CONSTRAINT email_suppression_address IF NOT EXISTS FOR (s:EmailSuppression) REQUIRE s.address IS UNIQUE;
CREATE CONSTRAINT email_soft_bounces_address IF NOT EXISTS FOR (b:EmailSoftBounces) REQUIRE b.address IS UNIQUE;
CREATE CONSTRAINT feedback_record_key IF NOT EXISTS FOR (r:FeedbackRecord) REQUIRE r.key IS UNIQUE;
CREATE INDEX feedback_record_received IF NOT EXISTS FOR (r:FeedbackRecord) ON (r.receivedAt);
CREATE INDEX campaign_state_provider_message IF NOT EXISTS FOR ()-[s:CAMPAIGN_STATE]-() ON (s.emailProviderMessageId);
// Feedback about a message whose send is not recorded yet (graph/feedback_marks.py): the record of the
// send seeks it by the message id it writes; the sweeper forgets old ones by their reception time.
CREATE INDEX pending_feedback_message IF NOT EXISTS FOR (f:PendingFeedback) ON (f.messageId);
CREATE INDEX pending_feedback_received IF NOT EXISTS FOR (f:PendingFeedback) ON (f.receivedAt);
// The audit trail of admin mutations (graph/audit.py): entries by id, and audit.list's three seeks, each
// ordered by orderKey ("<at>|<id>", so one range reads newest first): a tenant's, one campaign's, one actor's.
CREATE CONSTRAINT audit_entry_id IF NOT EXISTS FOR (a:AuditEntry) REQUIRE a.id IS UNIQUE;
CREATE INDEX audit_entry_tenant_order IF NOT EXISTS FOR (a:AuditEntry) ON (a.tenantId, a.orderKey);
CREATE INDEX audit_entry_campaign IF NOT EXISTS FOR (a:AuditEntry) ON (a.campaignId, a.orderKey);
CREATE INDEX audit_entry_actor IF NOT EXISTS FOR (a:AuditEntry) ON (a.actor, a.orderKey);
// DID-auth challenges (did/challenges.py): each used by its key (DID and nonce), a DID's outstanding ones
// counted against its cap, expired ones reaped in expiry order.
CREATE CONSTRAINT did_challenge_key IF NOT EXISTS FOR (c:DidChallenge) REQUIRE c.key IS UNIQUE;
CREATE INDEX did_challenge_did IF NOT EXISTS FOR (c:DidChallenge) ON (c.did);
CREATE INDEX did_challenge_expires IF NOT EXISTS FOR (c:DidChallenge) ON (c.expiresAt);
// Tenant records: one per tenantId; tenants.list pages by it in index order.
CREATE CONSTRAINT tenant_id IF NOT EXISTS FOR (t:Tenant) REQUIRE t.tenantId IS UNIQUE;
// One-time data migrations (graph/schema.py): each start looks its markers up by name.
CREATE INDEX schema_migration_name IF NOT EXISTS FOR (m:SchemaMigration) ON (m.name);
// Event webhooks: endpoints by id and by tenant; outbox batches per endpoint, those with an
// unsent event in order (queueKey is null once all are sent), all by time (replay, retention); each
// attempt per endpoint, newest first (webhookEndpoints.deliveries). (The first release wrote one
// :WebhookMessage per event, indexed as webhook_message_queue/_time; graph/schema.py folds any left
// into batches, and those two indexes stay empty.)
CREATE CONSTRAINT webhook_endpoint_id IF NOT EXISTS FOR (e:WebhookEndpoint) REQUIRE e.id IS UNIQUE;
CREATE INDEX webhook_endpoint_tenant IF NOT EXISTS FOR (e:WebhookEndpoint) ON (e.tenantId, e.createdAt);
CREATE INDEX webhook_batch_queue IF NOT EXISTS FOR (b:WebhookBatch) ON (b.endpointId, b.queueKey);
CREATE INDEX webhook_batch_time IF NOT EXISTS FOR (b:WebhookBatch) ON (b.endpointId, b.orderKey);
CREATE INDEX webhook_attempt_order IF NOT EXISTS FOR (a:WebhookAttempt) ON (a.endpointId, a.orderKey);
// Live segments (graph/rules/segment.py): a segment's locale (prefix), zone and age conditions seek
// these when they are the rule's most selective positive condition, so a page never reads all profiles.
CREATE INDEX profile_locale IF NOT EXISTS FOR (p:Profile) ON (p.locale);
CREATE INDEX profile_time_zone IF NOT EXISTS FOR (p:Profile) ON (p.timeZone);
CREATE INDEX profile_dob IF NOT EXISTS FOR (p:Profile) ON (p.dob);
// The same facts as a tenant's view holds them (docs/people.md; graph/rules/segment_facts.py): a
// segment of that tenant seeks its views beside the shared facts, tenantId first.
CREATE INDEX tenant_view_locale IF NOT EXISTS FOR (v:TenantView) ON (v.tenantId, v.locale);
CREATE INDEX tenant_view_time_zone IF NOT EXISTS FOR (v:TenantView) ON (v.tenantId, v.timeZone);
CREATE INDEX tenant_view_dob IF NOT EXISTS FOR (v:TenantView) ON (v.tenantId, v.dob);
