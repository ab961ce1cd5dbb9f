
MATCH (g:AccessGrant {tenantId: $tenantId}) WHERE g.subject IS NOT NULL AND g.role IS NOT NULL
RETURN g {.*} AS grant
ORDER BY g.subject, g.role
