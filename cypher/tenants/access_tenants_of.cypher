
MATCH (g:AccessGrant {subject: $subject}) WHERE g.tenantId IS NOT NULL AND g.role IS NOT NULL
RETURN DISTINCT g.tenantId AS tenantId
ORDER BY tenantId
