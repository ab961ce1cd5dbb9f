// Every subject granted a role, with where and what: make dev's OpenID provider signs in only these
// (and the platform admins). Development only (api/dev_subjects.py); bounded by $limit.
MATCH (g:AccessGrant) WHERE g.subject IS NOT NULL AND g.role IS NOT NULL AND g.tenantId IS NOT NULL
RETURN g {.*} AS grant
ORDER BY g.subject, g.tenantId, g.role
LIMIT $limit
