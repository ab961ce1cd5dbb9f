"""``bench.dispatch``'s processes: the children's environment (with ``bench.load``'s SMTP relay, the
email settings), the seeded campaigns, the admin's API calls; the dispatch it times and the warm-up are
``bench/_dispatch_send.py``'s."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench._languages import translated
from bench._support import (
    PROFILE_ID_CYPHER,
    SEED_BATCH,
    peak_rss_mb,
)
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.campaigns import definitions, deletion
from campaign_engine.config import Settings
from campaign_engine.domain.campaign import CampaignCreate
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.queue.local import MAX_RECEIVE_BATCH

REPO = Path(__file__).resolve().parents[1]
SECRET = "whsec_YmVuY2gtd2ViaG9vay1zZWNyZXQtMDEyMzQ1Njc4OWE="  # Standard Webhooks: whsec_ + base64
JWT_SECRET = "bench-jwt-secret-0123456789abcdef-0123456789abcdef"
ADMIN = "bench-admin"
TENANT = "bench"  # the bench campaigns' tenant
PAGE_SIZE = 1000
# Delivery-polling threads (CAMPAIGN_WORKER_THREADS), and the write/POST ceilings' threads. A batch
# spends most of its time waiting (recheck, POSTs, its turn to write), so 8 keep 2 cores busy where 4
# left them idle between batches (measured: ~1200/s with 8 against ~750-950/s with 4).
WORKER_THREADS = 8
# The worker's POST bound (CAMPAIGN_WEBHOOK_CONCURRENCY) and the POST ceiling's, always the same. The
# POSTs share one event loop, so a high bound costs no threads; it lets the inbox's group commit fill.
CONCURRENCY = 64
BATCH = MAX_RECEIVE_BATCH  # the worker's delivery batch on the local queue
# Measured rounds, each an end-to-end dispatch with its ceilings right after; the RESULT is the round
# with the median efficiency. This VM's speed drifts by tens of percent within a minute (steal, noisy
# neighbours: POST ceilings of 1,940 and 3,600/s ten minutes apart), so a ratio is only meaningful
# between measurements taken close together, and one drifted round must not decide it.
ROUNDS = 3
# --cap without a value: a notify cap no bench profile reaches (warm-up and rounds send each of them
# far fewer than 1000), so the figures show what the cap costs, not what it holds back.
DEFAULT_CAP = '{"*": {"notify": {"max": 1000, "windowSeconds": 604800}}}'


# With an SMTP relay (``smtp_port``): what ``make dev`` sets for its mail catcher (dev_stack.child_env),
# plus what its env file holds (the unsubscribe secret) and an app origin per tenant (every email
# carries a CTA to its tenant's app; the records are seeded from this at the API's and worker's start).
_APP_ORIGIN = "https://app.bench.test"
_EMAIL_ENV = {
    "CAMPAIGN_EMAIL_PROVIDER": "smtp",
    "SMTP_HOST": "127.0.0.1",
    "DOMAIN_NAME": "bench.test",
    "EMAIL_FROM": "news@bench.test",
    "CAMPAIGN_UNSUBSCRIBE_SECRET": "bench-unsubscribe-secret-0123456789abcdef",
    "CAMPAIGN_APP_ORIGINS": json.dumps({"default": _APP_ORIGIN, TENANT: _APP_ORIGIN}),
}
EMAIL_COPY = {"subject": "Bench news", "title": "Hello", "body": "One\nTwo", "ctaLabel": "Open"}


def child_env(uri: str, queue_path: Path, inbox_url: str, *, smtp_port: int | None = None) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("CAMPAIGN_", "NOTIFICATIONS_"))}
    email = {**_EMAIL_ENV, "SMTP_PORT": str(smtp_port)} if smtp_port is not None else {}
    return {
        **keep,
        "NEO4J_URI": uri,
        "CAMPAIGN_QUEUE_BACKEND": "local",
        "CAMPAIGN_LOCAL_QUEUE_PATH": str(queue_path),
        "NOTIFICATIONS_WEBHOOK_URL": f"{inbox_url}/api/notifications/send",
        "NOTIFICATIONS_WEBHOOK_SECRET": SECRET,
        "CAMPAIGN_ALLOW_PRIVATE_WEBHOOKS": "true",
        "CAMPAIGN_LOCAL_DEVELOPMENT": "true",  # the reference inbox: http on loopback, its own port
        "CAMPAIGN_DISPATCH_PAGE_SIZE": str(PAGE_SIZE),
        "CAMPAIGN_DISPATCH_DELAY_SECONDS": "0",
        "CAMPAIGN_WORKER_THREADS": str(WORKER_THREADS),
        "CAMPAIGN_WEBHOOK_CONCURRENCY": str(CONCURRENCY),
        **email,
    }


def spawn(args: list[str], env: dict[str, str], log: Path, *, cwd: Path = REPO) -> subprocess.Popen[bytes]:
    """``campaign_engine.cli`` of the code in ``cwd`` (first on ``sys.path`` with ``-m``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "campaign_engine.cli", *args],
        env=env,
        cwd=cwd,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live child process (Linux /proc), to show where the time goes."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def neo4j_pid() -> int | None:
    """The local Neo4j this benchmark started (a child JVM of this process), if any."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and "java" in stat.read_text().split(")", 1)[0]:
            return int(stat.parent.name)
    return None


_SEED = f"""
UNWIND range($first, $last) AS i
WITH {PROFILE_ID_CYPHER} AS id
MERGE (p:Profile {{profileId: id}})
  ON CREATE SET p.announcementPushOptOut = false, p.announcementEmailOptOut = false
WITH p
MATCH (c:Campaign {{id: $campaignId}})
CREATE (p)-[:IN_CAMPAIGN_AUDIENCE {{campaignId: c.id, profileId: p.profileId, addedAt: $now,
                                  source: 'bench', selfEnrolled: false}}]->(c)
"""


def seed(
    graph: Graph,
    campaign_id: str,
    profiles: int,
    languages: int = 1,
    *,
    tenant: str = TENANT,
    email: bool = False,
    extra: dict[str, object] | None = None,
) -> str:
    """A live notify campaign (notify + email with ``email``: its profiles need a verified primary
    address) whose audience is profiles ``bench-0000000``..., created as needed; the ids are generated by
    Neo4j, SEED_BATCH per statement. ``extra``: more of the definition, or other ``channels``."""
    now = datetime.now(UTC)
    definition: dict[str, object] = {
        "id": campaign_id,
        "name": "Bench",
        "channels": ["notify", "email"] if email else ["notify"],
        "notification": {"title": "Bench", "body": "Throughput"},
        **({"email": EMAIL_COPY} if email else {}),
        **(extra or {}),
    }
    created = definitions.create_campaign(
        graph,
        data=CampaignCreate.model_validate(translated(definition, languages)),
        tenant_id=tenant,
        now=now,
    )
    definitions.set_status(graph, campaign_id=campaign_id, status="live", now=now)
    for first in range(0, profiles, SEED_BATCH):
        graph.run(
            _SEED,
            first=first,
            last=min(first + SEED_BATCH, profiles) - 1,
            prefix="bench-",
            campaignId=campaign_id,
            now=format_ts(now),
        )
    return created.created_at


def forget_earlier_runs(graph: Graph) -> None:
    """Delete the campaigns of earlier runs on a reused database (``NEO4J_URI``) a batch at a time: with
    warm-up rounds their relationships outgrow one transaction's memory."""
    with graph.driver.session(database=graph.database) as session:
        session.run(
            "MATCH (c:Campaign)<-[r]-() WHERE c.id STARTS WITH 'bench' "
            "CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
    graph.run("MATCH (c:Campaign) WHERE c.id STARTS WITH 'bench' DETACH DELETE c")
    graph.run("MATCH (d:Dispatch) WHERE NOT (d)-[:DISPATCH_OF]->() DETACH DELETE d")
    deletion.reap_deleted_campaigns(graph)  # what an interrupted delete of an earlier run left


def notified_count(graph: Graph, campaign_id: str) -> int:
    rows = graph.run(
        "MATCH (:Campaign {id: $id})<-[s:CAMPAIGN_STATE]-() WHERE s.notifiedAt IS NOT NULL "
        "RETURN count(s) AS n",
        id=campaign_id,
    )
    return int(rows[0]["n"])


class Admin:
    """The admin's calls to the API process, over HTTP as a client would make them."""

    def __init__(self, base: str, *, tenant: str = TENANT) -> None:
        settings = Settings(auth_jwt_secret=JWT_SECRET, _env_file=None)
        # A platform admin acting for the campaigns' tenant (naming none, it acts in the default one).
        token = mint_token(settings, profile_id=ADMIN, scope=ADMIN_SCOPE, tenant_id=tenant)
        # A preview walks the whole audience: minutes at a million recipients on a busy machine.
        self._client = httpx.Client(
            base_url=base, headers={"authorization": f"Bearer {token}"}, timeout=httpx.Timeout(3600.0)
        )

    def query(self, proc: str, data: dict[str, object]) -> Any:
        """A read, asked again (up to 5 times) while the API answers 503 "try again": on a loaded
        machine a cold database's first preview can outlast the API's graph timeout."""
        for _ in range(4):
            reply = self._client.get(f"/trpc/{proc}", params={"input": json.dumps(data)})
            if reply.status_code != 503:
                break
            time.sleep(2.0)
        else:
            reply = self._client.get(f"/trpc/{proc}", params={"input": json.dumps(data)})
        return self._data(reply)

    def mutate(self, proc: str, data: dict[str, object]) -> Any:
        return self._data(self._client.post(f"/trpc/{proc}", json=data))

    @staticmethod
    def _data(reply: httpx.Response) -> Any:
        if reply.status_code != 200:
            raise RuntimeError(f"{reply.request.url.path}: {reply.status_code} {reply.text[:500]}")
        return reply.json()["result"]["data"]

    def close(self) -> None:
        self._client.close()


@dataclass
class Processes:
    worker: subprocess.Popen[bytes]
    inbox: subprocess.Popen[bytes]
    inbox_url: str
    database: int | None  # the local Neo4j's pid, when this benchmark started it
    api: int  # the API process's pid

    def peak_rss(self) -> str:
        return f"peak RSS: API {peak_rss_mb(self.api):.0f} MiB, worker {peak_rss_mb(self.worker.pid):.0f} MiB"


@dataclass
class Release:
    """One release's API (``admin``) and worker (``procs``), on the shared Neo4j and inbox."""

    name: str
    admin: Admin
    procs: Processes


@contextmanager
def paused(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """SIGSTOP keeps its connections and costs no CPU; its queue is its own, so nothing waits on it."""
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(proc.pid, signal.SIGCONT)
