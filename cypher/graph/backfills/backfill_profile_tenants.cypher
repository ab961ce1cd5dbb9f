MATCH (p:Profile) WHERE p.tenants IS NULL
WITH p LIMIT 10000
SET p.tenants = [$defaultTenant]
RETURN count(p) AS n
