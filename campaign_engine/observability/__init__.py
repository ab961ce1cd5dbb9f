"""Observability: metrics (``metrics``) and structured logs, shared by every edge."""
