// Live segments: the flat `hasSegment` of campaigns saved before it (campaigns/definitions.py); a segment
// is a top-level key of the stored JSON, and a quote inside any copy is escaped there.
MATCH (c:Campaign) WHERE c.hasSegment IS NULL
WITH c LIMIT 10000
SET c.hasSegment = coalesce(c.definition CONTAINS '"segment":', false)
RETURN count(c) AS n
