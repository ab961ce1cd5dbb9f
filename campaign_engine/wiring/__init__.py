"""The composition root every edge builds through: adapters and workers from ``Settings``.

``campaign-engine worker``, the Lambda handlers (``aws.py``), ``make dev``'s worker and the API's
``create_app`` (its dispatch and relay queues, its ``sendTestToMe`` channels, the webhook egress rules)
all take what they run from here, so the backend choice (local SQLite queue or SQS), every tuning knob
and every check made at start are read in one place. It sits above the use cases (``campaigns``, ``delivery``,
``feedback``), which therefore never import each other, and below the edges. Tests pass their own
queues, clock, transport or provider instead of patching.
"""

from campaign_engine.wiring.email import build_email_provider, build_email_worker
from campaign_engine.wiring.notify import (
    build_notification_worker,
    build_page_worker,
    build_webhook_transport,
    egress_rules,
)
from campaign_engine.wiring.queues import (
    Queues,
    build_delivery_queue,
    build_dispatch_queue,
    build_queues,
    build_webhooks_queue,
)
from campaign_engine.wiring.self_testers import build_email_self_tester, build_self_testers
from campaign_engine.wiring.tenants import tenant_directory
from campaign_engine.wiring.worker import (
    build_job_table,
    build_worker,
    run_sweep,
    run_worker,
    start_worker_metrics,
)

__all__ = [
    "Queues",
    "build_delivery_queue",
    "build_dispatch_queue",
    "build_email_provider",
    "build_email_self_tester",
    "build_email_worker",
    "build_job_table",
    "build_notification_worker",
    "build_page_worker",
    "build_queues",
    "build_self_testers",
    "build_webhook_transport",
    "build_webhooks_queue",
    "build_worker",
    "egress_rules",
    "run_sweep",
    "run_worker",
    "start_worker_metrics",
    "tenant_directory",
]
