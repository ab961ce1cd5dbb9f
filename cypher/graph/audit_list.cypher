// audit.list: newest first, keyset-paged by orderKey ("<at>|<id>": the fixed-width time, then the id
// for entries of one instant). {{KEY}} is the filter whose index leads the seek (audit_entry_campaign,
// audit_entry_actor, or audit_entry_tenant_order for none) and {{ORDER}} that index's properties, so every bound
// is one range on orderKey and the answer is read in index order, never sorted. $since bounds it below
// (inclusive: "<since>" sorts before "<since>|<id>"), $until above (exclusive: "<until>|<id>" sorts after
// "<until>"), and $after is the orderKey of the last entry of the previous page. {{INDEX}} hints that
// index's properties: the planner alone once took audit_entry_order for a campaign and sorted. Every
// lead is filtered to the caller's tenant.
MATCH (a:AuditEntry)
USING INDEX a:AuditEntry{{INDEX}}
WHERE {{KEY}} AND a.tenantId = $tenantId
  AND a.orderKey >= $since AND a.orderKey < $until AND a.orderKey < $after
  AND ($actor IS NULL OR a.actor = $actor)
RETURN a {.*} AS entry
ORDER BY {{ORDER}}
LIMIT $limit
