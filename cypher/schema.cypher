// Constraints and indexes for every key a hot path looks up. Every statement is idempotent.
// Neo4j Community has uniqueness constraints but no existence/key constraints: code enforces those.
CREATE CONSTRAINT profile_id IF NOT EXISTS FOR (p:Profile) REQUIRE p.profileId IS UNIQUE;
CREATE CONSTRAINT profile_did IF NOT EXISTS FOR (p:Profile) REQUIRE p.did IS UNIQUE;
CREATE CONSTRAINT profile_unsubscribe_id IF NOT EXISTS FOR (p:Profile) REQUIRE p.campaignUnsubscribeId IS UNIQUE;
CREATE CONSTRAINT campaign_id IF NOT EXISTS FOR (c:Campaign) REQUIRE c.id IS UNIQUE;
CREATE CONSTRAINT dispatch_id IF NOT EXISTS FOR (d:Dispatch) REQUIRE d.id IS UNIQUE;
CREATE CONSTRAINT tag_slug IF NOT EXISTS FOR (t:Tag) REQUIRE t.slug IS UNIQUE;
CREATE CONSTRAINT rate_bucket_key IF NOT EXISTS FOR (b:RateBucket) REQUIRE b.key IS UNIQUE;
CREATE INDEX contact_method_value IF NOT EXISTS FOR (m:ContactMethod) ON (m.type, m.value);
CREATE INDEX campaign_status IF NOT EXISTS FOR (c:Campaign) ON (c.status);
CREATE INDEX dispatch_status IF NOT EXISTS FOR (d:Dispatch) ON (d.status);
// Audience pages (getAudience, dispatch pages) seek and order memberships by (campaignId, profileId).
CREATE INDEX audience_member IF NOT EXISTS FOR ()-[m:IN_CAMPAIGN_AUDIENCE]-() ON (m.campaignId, m.profileId);
// The rate limiter sweeps expired per-minute buckets through this index.
CREATE INDEX rate_bucket_expires IF NOT EXISTS FOR (b:RateBucket) ON (b.expiresAt);
