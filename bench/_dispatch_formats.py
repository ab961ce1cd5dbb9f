"""``bench.dispatch --format learncard``: the same dispatch in LearnCard's format and the standard one,
side by side, and where a LearnCard POST's CPU goes.

The formats are two tenants in one run: ``bench`` (the deployment's ``standard``) and ``bench-lc`` whose
``notificationFormat`` is ``learncard``, so one worker, one API and one inbox serve both, and a round of
each runs back to back, the order swapped every round. The engine's DID for the run is a did:key
(``CAMPAIGN_DID``, ``CAMPAIGN_DID_KEY``: ``did_env``), which the inbox trusts by default and reads
without a fetch; a did:web is fetched once and cached, so the per-POST work is the same.

What a LearnCard POST costs beyond a standard one, measured in this process before the rounds: the body
(``lcn_body`` against ``payload_json``), the Standard Webhooks HMAC it no longer pays, one EdDSA JWT
signed, and one verified by the inbox. The worker signs one token per receiver origin per
``REUSE_SECONDS`` and the inbox verifies each token once (``inbox/learncard.py``); the figures show what
one per POST would cost instead, against the worker's and the inbox's CPU per recipient in the rounds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from bench._dispatch_send import run_dispatch, warm_up
from bench._dispatch_stack import (
    SECRET,
    TENANT,
    Admin,
    Processes,
    cpu_seconds,
    seed,
)
from bench._support import side_by_side
from campaign_engine.delivery.notify.lcn import REUSE_SECONDS, BearerTokens, lcn_body, learncard_did
from campaign_engine.did.engine import EngineDid, new_seed
from campaign_engine.did.keys import did_key_of
from campaign_engine.did.resolver import DidResolver
from campaign_engine.domain.notification import AnnouncementMetadata, AnnouncementPayload, payload_json
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.webhook_signature import signed_headers
from campaign_engine.graph.graph import Graph
from campaign_engine.inbox.learncard import SenderCheck

__all__ = ["LEARNCARD_TENANT", "did_env", "with_formats"]

LEARNCARD_TENANT = "bench-lc"
FORMATS = ("standard", "learncard")


def did_env() -> dict[str, str]:
    """The engine's DID for the run's processes: a did:key of a fresh seed."""
    seed_text = new_seed()
    key = EngineDid.of("did:key:pending", seed_text).key.public_key()
    return {"CAMPAIGN_DID": did_key_of(key), "CAMPAIGN_DID_KEY": seed_text}


def _per_call_us(fn: Callable[[], object], *, calls: int = 2000) -> float:
    started = time.process_time()
    for _ in range(calls):
        fn()
    return 1e6 * (time.process_time() - started) / calls


def micro_costs(env: dict[str, str]) -> dict[str, float]:
    """CPU µs per call of each piece of a POST that differs between the formats (this process)."""
    engine = EngineDid.of(env["CAMPAIGN_DID"], env["CAMPAIGN_DID_KEY"])
    created = format_ts(datetime.now(UTC))
    meta = AnnouncementMetadata(campaign_id="c", campaign_created_at=created, dispatch_id="d",
                                delivery_id="x" * 43, campaign_has_in_app=False)  # fmt: skip
    payload = AnnouncementPayload(recipient="bench-0000001", sender="Bench", title="Bench", body="Throughput",
                                  metadata=meta)  # fmt: skip
    raw = payload_json(payload)
    tokens = BearerTokens(engine)
    url = "http://127.0.0.1:1/api/notifications/send"
    fresh = BearerTokens(engine)
    token = tokens.for_url(url)
    check = SenderCheck(DidResolver(None), [engine.did])
    costs = {
        "standard_body": _per_call_us(lambda: payload_json(payload)),
        "hmac_sign": _per_call_us(lambda: signed_headers(SECRET, msg_id="m", body=raw, now=int(time.time()))),
        "learncard_body": _per_call_us(
            lambda: lcn_body(
                profile_id="bench-0000001",
                did=learncard_did("bench-0000001", "localhost"),
                sender_did=engine.did,
                title="Bench",
                body="Throughput",
                metadata=meta,
                sent=created,
            )
        ),
        "jwt_reused": _per_call_us(lambda: tokens.for_url(url)),
        "jwt_signed": _per_call_us(lambda: fresh._sign("http://127.0.0.1:1", int(time.time())), calls=500),
        "jwt_held": _per_call_us(lambda: check.sender_of(token)),
    }
    costs["jwt_verified"] = _per_call_us(
        lambda: SenderCheck(DidResolver(None), [engine.did]).sender_of(token), calls=500
    )
    print(
        "CPU per call (µs): " + ", ".join(f"{name} {us:.1f}" for name, us in costs.items())
        + f"; the worker signs one JWT per receiver per {REUSE_SECONDS} s, the inbox verifies each once",
        flush=True,
    )  # fmt: skip
    return costs


def with_formats(
    graph: Graph, admin: Admin, procs: Processes, base: str, env: dict[str, str], *, n: int, rounds: int,
    give_up: float,
) -> str:  # fmt: skip
    """Rounds of ``n`` alternating the standard tenant and the LearnCard one (warmed up first); prints
    both rates, the CPU per recipient of the worker, inbox and Neo4j per format, and what signing and
    verifying one JWT per POST would add; returns the RESULT fields."""
    micro = micro_costs(env)
    record = {"tenantId": LEARNCARD_TENANT, "name": "Bench LearnCard", "notificationFormat": "learncard"}
    try:
        admin.mutate("tenants.create", record)
    except RuntimeError:  # a reused database (NEO4J_URI) keeps it from an earlier run
        admin.mutate("tenants.update", {k: v for k, v in record.items() if k != "name"})
    learncard = Admin(base, tenant=LEARNCARD_TENANT)
    admins = {"standard": admin, "learncard": learncard}
    tenants = {"standard": TENANT, "learncard": LEARNCARD_TENANT}
    time.sleep(6.0)  # the worker's tenant directory (5 s) has seen the new tenant's format
    warm_up(graph, learncard, max(1, min(n // 2, 10_000)), give_up, label="lc-warmup",
            tenant=LEARNCARD_TENANT)  # fmt: skip
    rates: dict[str, list[float]] = {f: [] for f in FORMATS}
    cpu: dict[str, dict[str, list[float]]] = {f: {"worker": [], "inbox": [], "neo4j": []} for f in FORMATS}
    pids = {"worker": procs.worker.pid, "inbox": procs.inbox.pid, "neo4j": procs.database or -1}
    for k in range(1, rounds + 1):
        for fmt in FORMATS if k % 2 else FORMATS[::-1]:
            campaign_id = f"bench-format-{k}-{fmt}"
            seed(graph, campaign_id, n, tenant=tenants[fmt])
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            _, elapsed, done = run_dispatch(graph, admins[fmt], campaign_id, n, give_up)
            for name, pid in pids.items():
                cpu[fmt][name].append(1000 * (cpu_seconds(pid) - before[name]) / max(done, 1))
            rates[fmt].append(done / elapsed)
            print(
                f"format round {k} {fmt}: {done / elapsed:.0f}/s; CPU per recipient: "
                + ", ".join(f"{name} {cpu[fmt][name][-1]:.3f} ms" for name in pids),
                flush=True,
            )
    learncard.close()
    ratio = side_by_side("recipients/s learncard", rates["learncard"], rates["standard"], ref="standard")
    fields = ""
    for name in pids:
        lc, std = statistics.median(cpu["learncard"][name]), statistics.median(cpu["standard"][name])
        print(f"{name} CPU per recipient: learncard {lc:.3f} ms, standard {std:.3f} ms, ratio {lc / std:.3f}")
        fields += f" {name}_cpu_ms_learncard={lc:.3f} {name}_cpu_ms_standard={std:.3f}"
    worker_ms = statistics.median(cpu["learncard"]["worker"])
    inbox_ms = statistics.median(cpu["learncard"]["inbox"])
    print(
        f"one JWT signed per POST would add {micro['jwt_signed'] / 1000:.3f} ms to the worker's "
        f"{worker_ms:.3f} ms per recipient ({100 * micro['jwt_signed'] / 1000 / worker_ms:.0f}%); "
        f"one verified per POST {micro['jwt_verified'] / 1000:.3f} ms to the inbox's {inbox_ms:.3f} ms "
        f"({100 * micro['jwt_verified'] / 1000 / inbox_ms:.0f}%)",
        flush=True,
    )
    return (
        f" standard_per_s={statistics.median(rates['standard']):.0f}"
        f" learncard_per_s={statistics.median(rates['learncard']):.0f} learncard_ratio={ratio:.3f}{fields}"
        f" jwt_sign_us={micro['jwt_signed']:.0f} jwt_verify_us={micro['jwt_verified']:.0f}"
    )
