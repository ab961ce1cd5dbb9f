"""The A/B test wave's done-when, through ``make dev``'s processes: the local Neo4j launcher,
the reference inbox, the SMTP catcher, the worker and the API as OS processes wired by
``dev_stack.child_env`` (``bench/_chaos_stack.py``, without faults), driven over HTTP as a user drives them.

A campaign with two email variants goes out with a test wave of 20% and a decision after a few seconds.
The test clicks the CTA links (``/c?token=``, both hops, as a browser follows them) of one variant's
test recipients, read from the catcher's mailbox; the worker decides on time, and the rest of the
audience receives only that variant, while nobody receives two emails or two variants."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import parseaddr
from functools import partial
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from bench._chaos_stack import Stack
from bench.chaos import Api
from campaign_engine.domain.ab_variants import in_test_wave
from campaign_engine.graph.graph import Graph
from tests.support.concurrency import wait_for
from tests.support.dev_stacks import on_session_graph

pytestmark = pytest.mark.e2e

DEADLINE = 180.0
_wait = partial(wait_for, timeout=DEADLINE, every=0.2)
READERS = [f"w{i:03d}" for i in range(60)]
SHARE = 0.2


@pytest.fixture(scope="module")
def dev_stack(
    tmp_path_factory: pytest.TempPathFactory, neo4j_uri: str, session_graph: Graph
) -> Iterator[Stack]:
    """The conftest's dev stack, with a test wave of a few readers allowed (the evidence rule has its
    own test, ``tests/integration/campaigns/sending/test_test_wave.py``)."""
    running = Stack(tmp_path_factory.mktemp("dev"), page_size=100, delay_seconds=0, graph_uri=neo4j_uri)
    running.env["CAMPAIGN_EXPERIMENT_MIN_PER_VARIANT"] = "1"
    with on_session_graph(running, session_graph):
        yield running


def _email(tag: str) -> dict[str, Any]:
    return {"subject": f"Subject {tag}", "title": f"Title {tag}", "body": f"Body {tag}", "ctaLabel": "Open"}


CAMPAIGN = {
    "id": "wave",
    "name": "Wave",
    "channels": ["email"],
    "email": _email("A"),
    "variants": [{"id": "A"}, {"id": "B", "email": _email("B")}],
}


def _mail(mailbox: Path) -> dict[str, list[EmailMessage]]:
    """Every message the catcher holds, by recipient: a list, so a second email would show."""
    found: dict[str, list[EmailMessage]] = defaultdict(list)
    for path in sorted(mailbox.glob("*.eml")):
        message = cast(EmailMessage, BytesParser(policy=policy.default).parsebytes(path.read_bytes()))
        found[parseaddr(str(message["To"]))[1].split("@")[0]].append(message)
    return found


def _click(message: EmailMessage) -> str:
    """Follow the CTA as a browser does: ``/c`` → ``/c/go`` (records) → the pinned URL (not fetched)."""
    html = message.get_body(("html",))
    assert html is not None
    link = re.search(r'href="(http[^"]+/c\?token=[^"]+)"', html.get_content())
    assert link is not None
    first = httpx.get(link.group(1).replace("&amp;", "&"), timeout=30)
    assert first.status_code == 302 and "/c/go?token=" in first.headers["location"]
    second = httpx.get(str(first.url.join(first.headers["location"])), timeout=30)
    assert second.status_code == 302
    return second.headers["location"]


def test_the_rest_gets_only_the_variant_the_test_wave_clicked_through_the_dev_processes(
    dev_stack: Stack, dev_admin: Api
) -> None:
    with (dev_stack.work / "readers.jsonl").open("w") as out:
        for pid in READERS:
            email = {"address": f"{pid}@example.com", "verified": True, "primary": True}
            out.write(json.dumps({"profileId": pid, "dob": "1990-01-01", "emails": [email]}) + "\n")
    dev_stack.cli("profiles", "import", str(dev_stack.work / "readers.jsonl"))
    dev_admin.mutate("campaigns.create", CAMPAIGN)
    dev_admin.mutate("campaigns.addAudience", {"campaignId": "wave", "source": {"type": "all"}})
    dev_admin.mutate("campaigns.setStatus", {"campaignId": "wave", "status": "live"})
    testers = {pid for pid in READERS if in_test_wave("wave", pid, SHARE)}
    assert 4 <= len(testers) <= 24

    preview = dev_admin.query("campaigns.previewDispatch", {"campaignId": "wave"})
    experiment = {"testShare": SHARE, "metric": "emailClicked", "decideAfterSeconds": 20}
    body = {"campaignId": "wave", "experiment": experiment, "expectedPreviewToken": preview["previewToken"]}
    started = dev_admin.mutate("campaigns.dispatch", body)
    dispatch_id = started["dispatchIds"]["email"]

    _wait("the test wave emailed", lambda: set(_mail(dev_stack.mailbox)) == testers)
    testing = dev_admin.query("campaigns.getDispatch", {"dispatchId": dispatch_id})
    assert (testing["status"], testing["phase"]) == ("sending", "testing")
    mail = _mail(dev_stack.mailbox)
    arms = {pid: str(messages[0]["Subject"]).removeprefix("Subject ") for pid, messages in mail.items()}
    assert set(arms.values()) == {"A", "B"}
    winner = "B"
    clickers = sorted(pid for pid, arm in arms.items() if arm == winner)
    for pid in clickers:
        assert _click(mail[pid][0]).startswith("http")  # the campaign's CTA, pinned by the token
    _wait("the clicks recorded", lambda: dev_admin.query("campaigns.getStats", {"campaignId": "wave"})
          ["variants"][winner]["emailClicked"] == len(clickers))  # fmt: skip

    _wait("everyone emailed", lambda: set(_mail(dev_stack.mailbox)) == set(READERS))
    _wait(
        "the dispatch completed",
        lambda: (
            dev_admin.query("campaigns.getDispatch", {"dispatchId": dispatch_id})["status"] == "completed"
        ),
    )
    mail = _mail(dev_stack.mailbox)
    assert {pid: len(messages) for pid, messages in mail.items() if len(messages) != 1} == {}  # one each
    for pid in READERS:
        served = arms[pid] if pid in testers else winner
        assert str(mail[pid][0]["Subject"]) == f"Subject {served}", pid
    done = dev_admin.query("campaigns.getDispatch", {"dispatchId": dispatch_id})
    assert done["phase"] == "rest" and done["decision"]["winner"] == winner
    assert done["decision"]["decidedBy"] == "system:test-wave"
    assert done["decision"]["decidedAt"] >= testing["decideAt"]
    rates = {r["variantId"]: (r["numerator"], r["denominator"]) for r in done["decision"]["rates"]}
    assert rates == {"A": (0, len(testers) - len(clickers)), winner: (len(clickers), len(clickers))}
