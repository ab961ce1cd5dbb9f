
MATCH (p:Profile {profileId: $profileId}) WHERE $tenant IN p.tenants
SET p.tenants = [t IN p.tenants WHERE t <> $tenant]
WITH p
OPTIONAL MATCH (p)-[m:IN_CAMPAIGN_AUDIENCE]->(:Campaign {tenantId: $tenant})
DELETE m
WITH DISTINCT p
RETURN p.tenants = [] AS orphaned
