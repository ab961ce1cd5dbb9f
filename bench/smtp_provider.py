"""The SMTP provider alone, not a test: prints its rate and CPU, ends with one RESULT line.

    .venv/bin/python -m bench.smtp_provider [--messages 20000] [--page-size 500] [--connections 8]
        [--runs 3] [--no-pipelining]

The sink is ``tests/support/smtp_sink.py`` in its own process (uvloop), so it does not take the
provider's interpreter lock; it offers PIPELINING (unless ``--no-pipelining``), counts every message
and records each recipient. The messages are composed as the email worker composes them (the real
templates, a signed unsubscribe link per recipient), one page at a time, then handed to
``SmtpProvider.send_batch``: the figure is build + send, what the worker's sender thread spends. Each
run checks that the sink stored exactly ``--messages`` distinct recipients. CPU is this process's (the
provider and its loop thread), per 1,000 messages; the median run is the RESULT.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench._smtp_sink import sink_process
from campaign_engine.delivery.email.compose import compose_email, email_content_for
from campaign_engine.delivery.email.provider import OutgoingEmail
from campaign_engine.delivery.email.smtp import SmtpProvider
from campaign_engine.domain.campaign import CampaignPublic
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens


def _campaign() -> CampaignPublic:
    return CampaignPublic.model_validate(
        {
            "id": "bench-smtp",
            "name": "Bench",
            "status": "live",
            "channels": ["email"],
            "tenantId": "default",
            "email": {
                "subject": "Bench news — été",
                "title": "Hello",
                "body": "One\nTwo\n.three",
                "ctaLabel": "Open",
            },
            "createdAt": "2026-01-01T00:00:00.000000Z",
            "updatedAt": "2026-01-01T00:00:00.000000Z",
            "revision": 1,
        }
    )


def pages(total: int, page_size: int, run: int) -> list[list[OutgoingEmail]]:
    content = email_content_for(
        _campaign(), origins={"default": "https://app.example.org"}, tenants={}, default_tenant="default"
    )
    tokens = UnsubscribeTokens("bench-secret-" + "x" * 40)
    messages = [
        compose_email(
            content,
            key=f"r{run}-{i}",
            to=f"r{run}.{i}@example.com",
            unsubscribe_id=f"unsub-{i}",
            tokens=tokens,
            domain_name="campaigns.example.org",
        )
        for i in range(total)
    ]
    return [messages[i : i + page_size] for i in range(0, total, page_size)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-pipelining", action="store_true")
    args = parser.parse_args()
    rates: list[float] = []
    cpus: list[float] = []
    with sink_process(pipelining=not args.no_pipelining) as sink:
        provider = SmtpProvider(
            host="127.0.0.1",
            port=sink.port,
            sender="Bench <bench@example.org>",
            starttls="off",
            max_connections=args.connections,
        )
        try:
            provider.send_batch(pages(200, 200, -1)[0])  # warm: sessions open, code paths hot
            for run in range(args.runs):
                todo = pages(args.messages, args.page_size, run)
                sink.reset()
                sink_cpu = sink.cpu_seconds()
                cpu0, wall0 = time.process_time(), time.perf_counter()
                outcomes = [r.outcome for page in todo for r in provider.send_batch(page)]
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                sink_cores = (sink.cpu_seconds() - sink_cpu) / wall
                stored = sink.addresses()
                accepted = outcomes.count("accepted")
                assert accepted == len(stored) == len(set(stored)) == args.messages, (accepted, len(stored))
                rates.append(args.messages / wall)
                cpus.append(cpu / args.messages * 1000)
                print(
                    f"run {run + 1}: {rates[-1]:,.0f} msgs/s, provider cpu {cpu / wall:.2f} cores,"
                    f" {cpus[-1]:.3f} core-s/1000, sink cpu {sink_cores:.2f} cores"
                )
        finally:
            provider.close()
    print(
        f"RESULT msgs_per_s={statistics.median(rates):.0f}"
        f" cpu_core_s_per_1000={statistics.median(cpus):.3f}"
        f" connections={args.connections} pipelining={not args.no_pipelining}"
    )


if __name__ == "__main__":
    main()
