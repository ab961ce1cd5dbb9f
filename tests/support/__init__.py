"""Real loopback peers and helpers shared by tests (servers, fixtures that start processes)."""
