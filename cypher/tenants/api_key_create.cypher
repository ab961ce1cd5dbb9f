
CREATE (k:ApiKey {id: $id, tenantId: $tenantId, name: $name, role: $role, hash: $hash,
                  createdAt: $now, createdBy: $actor, expiresAt: $expiresAt})
RETURN k {.*} AS key
