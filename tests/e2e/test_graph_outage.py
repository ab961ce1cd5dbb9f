"""A graph that goes away: Neo4j is killed mid-dispatch and under API load.

Everything is real: this test's own Neo4j (the local launcher, its own port and store, so the session
graph of other tests is untouched), the API served by uvicorn, the worker as an OS process
(``python -m campaign_engine.cli worker``), the reference inbox and the SMTP catcher, on one durable
local queue file. The dispatch walks both the notify and the email channel in paced waves (pages of 10,
1 s apart), so "some but not all recipients reached" is a wide window, not a race.

Neo4j gets SIGKILL (no clean shutdown, pooled connections die mid-use). While it is down:

- concurrent API calls (queries, mutations, a batch, a user call through the graph-backed rate limit)
  all answer 503 with the tRPC envelope (``SERVICE_UNAVAILABLE``), each within a bound: never a 500,
  never a call that sits out the driver's 30 s retry budget;
- both unsubscribe POSTs answer 503 with every header a normal answer carries (CSP, no-store,
  no-referrer, ...) plus ``Retry-After``; the browser one is a readable page. The GETs need no graph
  and still answer 200;
- the worker process keeps running.

Then Neo4j starts again on the same store and port, and the dispatch completes with exact counts: every
member has one record at the inbox that was POSTed once, one email at the catcher, and both Dispatches
count the audience exactly, with no page failure recorded for the outage.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from campaign_engine.api.app import create_app
from campaign_engine.config import Settings
from campaign_engine.delivery.email.catcher import start_smtp_catcher
from campaign_engine.graph.graph import open_graph
from campaign_engine.graph.local_neo4j import LocalNeo4j
from campaign_engine.unsubscribe.tokens import UnsubscribeTokens
from tests.conftest import ADMIN_ID, TEST_JWT_SECRET, free_port
from tests.e2e.conftest import NEO4J_START_TIMEOUT
from tests.support.delivery import WEBHOOK_SECRET, inbox_server, notified
from tests.support.email import ORIGINS, UNSUBSCRIBE_SECRET, address_of, emailed
from tests.support.graph_outage import (
    CALL_BOUND,
    CAMPAIGN,
    MEMBERS,
    PAGE_SIZE,
    Outage,
    _assert_unavailable_envelope,
    _calls,
    _confirm_page,
    _page_headers,
    _refused,
    _seed,
    _send,
    _unsubscribe,
    _worker_env,
    wait_for,
)
from tests.support.processes import CliProcess
from tests.support.servers import serve_in_thread

pytestmark = pytest.mark.e2e


@pytest.fixture
def outage(own_neo4j: LocalNeo4j, tmp_path: Path) -> Iterator[Outage]:
    mailbox = tmp_path / "mail"
    smtp_port = free_port()
    catcher = start_smtp_catcher("127.0.0.1", smtp_port, mailbox)
    try:
        with inbox_server(tmp_path) as inbox:
            settings = Settings(
                neo4j_uri=own_neo4j.uri,
                neo4j_password=SecretStr(""),
                auth_jwt_secret=SecretStr(TEST_JWT_SECRET),
                campaign_admin_profile_ids=ADMIN_ID,
                domain_name="campaigns.test",
                campaign_queue_backend="local",
                campaign_local_queue_path=str(tmp_path / "queue.sqlite3"),
                notifications_webhook_url=f"{inbox.url}/api/notifications/send",
                notifications_webhook_secret=SecretStr(WEBHOOK_SECRET),
                campaign_allow_private_webhooks=True,
                campaign_local_development=True,
                campaign_email_provider="smtp",
                smtp_host="127.0.0.1",
                smtp_port=smtp_port,
                email_from="news@campaigns.test",
                campaign_unsubscribe_secret=SecretStr(UNSUBSCRIBE_SECRET),
                campaign_app_origins=json.loads(ORIGINS),
                _env_file=None,
            )
            graph = open_graph(settings)
            try:
                with serve_in_thread(create_app(settings)) as api:  # its lifespan applies the schema
                    worker = CliProcess(["worker"], _worker_env(settings), tmp_path / "worker.log")
                    try:
                        yield Outage(
                            neo4j=own_neo4j,
                            settings=settings,
                            graph=graph,
                            api=api,
                            inbox_db=tmp_path / "inbox.sqlite3",
                            mailbox=mailbox,
                            worker=worker.popen,
                        )
                    finally:
                        worker.stop()
            finally:
                graph.close()
    finally:
        catcher.stop()


# --- the test -------------------------------------------------------------------------------------------


def test_graph_killed_mid_dispatch_and_under_load_then_restarted(outage: Outage) -> None:
    _seed(outage.graph)
    # An id no profile holds: the opt-out still needs the graph, and answers never reveal the difference.
    token = UnsubscribeTokens.from_settings(outage.settings).issue("no-such-unsubscribe-id")
    normal_page = _unsubscribe(outage, token, one_click=False)
    normal_one_click = _unsubscribe(outage, token, one_click=True)
    normal_confirm = _confirm_page(outage, token)
    assert (normal_page.status_code, normal_one_click.status_code, normal_confirm.status_code) == (
        200,
        200,
        200,
    )

    with httpx.Client(base_url=outage.api, timeout=60) as client:
        started = client.post(
            "/trpc/campaigns.dispatch", json={"campaignId": CAMPAIGN}, headers=outage.admin()
        )
    assert started.status_code == 200, started.text
    wait_for("the first two notify pages at the inbox", lambda: len(outage.inbox_rows()) >= 2 * PAGE_SIZE)

    outage.neo4j.kill()
    assert _refused(outage.neo4j.port)
    at_kill_notified, at_kill_mailed = len(outage.inbox_rows()), len(outage.mail_to())
    assert at_kill_notified < len(MEMBERS), "the notify walk finished before the graph went away"
    assert at_kill_mailed < len(MEMBERS), "the email walk finished before the graph went away"

    # API load during the outage: every procedure kind, from 8 threads at once, three rounds.
    calls = _calls() * 3
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda call: _send(outage, call), calls))
    for call, answer, elapsed in answers:
        _assert_unavailable_envelope(answer, call.path)
        assert elapsed < CALL_BOUND, (call.path, elapsed)
    with httpx.Client(base_url=outage.api, timeout=60) as client:
        batch = client.get(
            "/trpc/campaigns.list,campaigns.get",
            params={"batch": "1", "input": json.dumps({"0": {}, "1": {"campaignId": CAMPAIGN}})},
            headers=outage.admin(),
        )
        ready = client.get("/readyz")
    assert batch.status_code == 503, batch.text
    assert [item["error"]["data"]["code"] for item in batch.json()] == ["SERVICE_UNAVAILABLE"] * 2
    assert (ready.status_code, ready.json()) == (503, {"status": "unavailable"})

    # The unsubscribe POSTs need the graph: 503 with the usual headers; the GET needs none.
    page = _unsubscribe(outage, token, one_click=False)
    assert page.status_code == 503, page.text
    assert _page_headers(page) == _page_headers(normal_page)
    assert page.headers["retry-after"].isdigit()
    assert "<h1>Please try again in a moment</h1>" in page.text
    page_es = _unsubscribe(outage, token, one_click=False, language="es")
    assert page_es.status_code == 503 and page_es.headers["content-language"] == "es"
    assert '<html lang="es"' in page_es.text and "Inténtalo de nuevo" in page_es.text
    one_click = _unsubscribe(outage, token, one_click=True)
    assert one_click.status_code == 503, one_click.text
    assert _page_headers(one_click) == _page_headers(normal_one_click)
    assert one_click.headers["retry-after"].isdigit()
    assert "try again later" in one_click.text.lower()
    confirm = _confirm_page(outage, token)
    assert confirm.status_code == 200
    assert _page_headers(confirm) == _page_headers(normal_confirm)

    assert outage.worker.poll() is None, "the worker exited while the graph was down"
    assert len(outage.inbox_rows()) < len(MEMBERS) and len(outage.mail_to()) < len(MEMBERS)

    outage.neo4j.start(timeout=NEO4J_START_TIMEOUT)  # same store, same port: crash recovery
    with httpx.Client(base_url=outage.api, timeout=60) as client:
        # The first call after the restart: the connections the kill left in the pool are replaced.
        after = client.get(
            "/trpc/campaigns.get",
            params={"input": json.dumps({"campaignId": CAMPAIGN})},
            headers=outage.admin(),
        )
        assert after.status_code == 200, after.text
        assert client.get("/readyz").status_code == 200

    def completed() -> bool:
        found = outage.dispatches()
        return set(found) == {"notify", "email"} and all(d.status == "completed" for d in found.values())

    wait_for("both dispatches to complete after the restart", completed)
    wait_for("every notification at the inbox", lambda: len(outage.inbox_rows()) == len(MEMBERS))
    assert outage.worker.poll() is None, "the worker exited"

    inbox = outage.inbox_rows()
    assert sorted(inbox) == MEMBERS
    assert {pid: n for pid, n in inbox.items() if n != 1} == {}  # each POSTed once: nothing redone
    assert outage.mail_to() == Counter({address_of(pid): 1 for pid in MEMBERS})
    assert notified(outage.graph, CAMPAIGN) == MEMBERS
    assert emailed(outage.graph, CAMPAIGN) == MEMBERS
    found = outage.dispatches()
    n = len(MEMBERS)
    notify, mail = found["notify"], found["email"]
    assert (notify.enqueued, notify.acknowledged, notify.rejected, notify.suppressed) == (n, n, 0, 0)
    assert (mail.enqueued, mail.emailed, mail.rejected, mail.uncertain, mail.throttled) == (n, n, 0, 0, 0)
    assert (notify.page_failures, mail.page_failures) == (0, 0), "the outage counted as a failing page"
