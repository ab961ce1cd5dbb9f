// The frequency cap's part of email_page.cypher (its EMAIL_CAP placeholder, filled in by
// delivery/frequency_cap.py when an email cap is configured; docs/architecture.md "Frequency cap"),
// decided there under the profile lock:
// a claim takes a slot in p.emailCapLog once per (profile, campaign) (emailCapCountedAt: a released and
// re-claimed recipient never counts twice; the log is pruned to the longest window, $capKeep newest); a
// capped member is marked for getStats and counted once per Dispatch (firstCapped, added to the
// Dispatch in this transaction by delivery/frequency_cap.py).
CALL (p, c, s, blocked, cap) {
  WITH p, c, s, blocked, cap
  WHERE cap IS NOT NULL AND blocked IS NULL AND s.emailCapCountedAt IS NULL
  MATCH (p)-[st:CAMPAIGN_STATE]->(c)
  SET st.emailCapCountedAt = $now, st.emailCappedAt = null, st.emailCappedDispatchId = null,
      p.emailCapLog = ([t IN coalesce(p.emailCapLog, []) WHERE t > $capKeepSince] + [$now])[-$capKeep..]
}
CALL (p, c, s, blocked) {
  WITH p, c, s, blocked
  WHERE blocked = 'capped' AND s IS NULL
  CREATE (p)-[:CAMPAIGN_STATE {emailCappedAt: $now, emailCappedDispatchId: $dispatchId}]->(c)
}
CALL (s, blocked) {
  WITH s, blocked
  WHERE blocked = 'capped' AND s IS NOT NULL
  SET s.emailCappedAt = $now, s.emailCappedDispatchId = $dispatchId
}
