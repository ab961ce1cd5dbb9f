
MERGE (g:AccessGrant {tenantId: $tenantId, subject: $subject, role: $role})
ON CREATE SET g.grantedAt = $now, g.grantedBy = $actor
RETURN g {.*} AS grant
