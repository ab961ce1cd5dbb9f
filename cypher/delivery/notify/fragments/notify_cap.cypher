// The frequency cap's part of notify_recheck.cypher (its NOTIFY_CAP placeholder, filled in by
// delivery/frequency_cap.py when a notify cap is configured; docs/architecture.md "Frequency cap").
// Runs under the profile locks the recheck took first, in ascending profileId order. Per profile, each
// sendable job of a capped tenant either reuses the slot its (profile, campaign) already holds
// (s.notifyCapCountedAt: a retried or repeated delivery never counts twice), reserves a new one in
// p.notifyCapLog, or is held back as 'capped'. A profile's jobs are decided together (grouped, then
// folded), so two campaigns' jobs for one profile in the same batch see each other's reservation; the
// lock orders them across concurrent batches. A second job of the same (profile, campaign) in one batch
// (two dispatches) is not sent: the first stands for it. The log is pruned to the longest window on
// every write and keeps at most $capKeep entries. A reserved slot counts even if the POST is later
// refused or never acknowledged (conservative: the receiver may have shown it). `facts` (the
// recipient's receiver and locale) rides through to the recheck's RETURN. A critical campaign skips the
// cap (domain/priority.py): it neither waits for a slot nor takes one.
WITH job, c, p, blocked, facts,
     CASE WHEN blocked IS NULL AND job.testId IS NULL AND coalesce(c.priority, '') <> 'critical'
          THEN coalesce($caps[coalesce(c.tenantId, '*')], $caps['*']) END AS cap
OPTIONAL MATCH (p)-[s:CAMPAIGN_STATE]->(c)
WHERE cap IS NOT NULL
WITH p, collect({job: job, c: c, blocked: blocked, cap: cap, facts: facts,
                 counted: s.notifyCapCountedAt IS NOT NULL,
                 cappedBy: s.notifyCappedDispatchId}) AS rows
WITH p, rows, [t IN coalesce(p.notifyCapLog, []) WHERE t > $capKeepSince] AS log
WITH p, rows, log,
     reduce(acc = {log: log, seen: [], out: []}, r IN rows |
       CASE
         WHEN r.cap IS NULL THEN {log: acc.log, seen: acc.seen, out: acc.out + [coalesce(r.blocked, '')]}
         WHEN r.c.id IN acc.seen THEN {log: acc.log, seen: acc.seen, out: acc.out + ['already_in_batch']}
         WHEN r.counted THEN {log: acc.log, seen: acc.seen + [r.c.id], out: acc.out + ['']}
         WHEN size([t IN acc.log WHERE t > r.cap.since]) >= r.cap.max
           THEN {log: acc.log, seen: acc.seen + [r.c.id], out: acc.out + ['capped']}
         ELSE {log: acc.log + [$now], seen: acc.seen + [r.c.id], out: acc.out + ['reserve']}
       END) AS fold
CALL (p, log, fold) {
  WITH p, log, fold
  WHERE size(fold.log) > size(log)
  SET p.notifyCapLog = fold.log[-$capKeep..]
}
UNWIND range(0, size(rows) - 1) AS i
WITH p, rows[i] AS r, fold.out[i] AS verdict
CALL (p, r, verdict) {
  WITH p, r, verdict
  WHERE verdict IN ['reserve', 'capped']
  WITH p, r.c AS c, r.job AS job, verdict
  OPTIONAL MATCH (p)-[existing:CAMPAIGN_STATE]->(c)
  CALL (p, c, existing) {
    WITH p, c, existing
    WHERE existing IS NULL
    CREATE (p)-[s:CAMPAIGN_STATE]->(c)
    RETURN s
    UNION
    WITH existing
    WHERE existing IS NOT NULL
    RETURN existing AS s
  }
  SET s.notifyCapCountedAt = CASE WHEN verdict = 'reserve' THEN $now ELSE s.notifyCapCountedAt END,
      s.notifyCappedAt = CASE WHEN verdict = 'capped' THEN $now END,
      s.notifyCappedDispatchId = CASE WHEN verdict = 'capped' THEN job.dispatchId END
}
WITH r.job AS job, r.c AS c, p, r.facts AS facts,
     CASE WHEN verdict IN ['', 'reserve'] THEN null ELSE verdict END AS blocked,
     verdict = 'capped' AND coalesce(r.cappedBy, '') <> r.job.dispatchId AS firstCapped
