
MATCH (g:AccessGrant {tenantId: $tenantId, subject: $subject}) WHERE g.role IS NOT NULL
RETURN collect(g.role) AS roles
