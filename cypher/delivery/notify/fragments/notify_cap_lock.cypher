CALL (p, job) {
  WITH p, job
  WHERE p IS NOT NULL AND job.testId IS NULL
  SET p.campaignStateLock = coalesce(p.campaignStateLock, 0) + 1
}