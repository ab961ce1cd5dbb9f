
MATCH (g:AccessGrant {tenantId: $tenantId, subject: $subject, role: $role})
DELETE g
RETURN count(*) AS removed
