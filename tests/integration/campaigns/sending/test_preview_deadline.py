"""A large send's preview on a busy API: each page of the audience walk is a statement of its own under
the API's deadline, so a preview whose pages together outlast the deadline still answers, and its token
still confirms the send.

The API being busy between pages (its interpreter shared with app traffic, an export and an import)
is played by a pause after each page, which is what that does to one long transaction: Neo4j counts a
transaction's deadline from its start, whatever the client was doing. Neo4j checks deadlines about
every 2 s, so the pauses add up to well past the 0.5 s deadline and that check."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from campaign_engine.campaigns.sending import preview_pass
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.graph.graph import Graph
from tests.support.delivery import NOW, add_members, local_queues, make_campaign

_DEADLINE = 0.5
_PAGE = 50
_MEMBERS = 3 * _PAGE + 7  # four pages
_PAUSE = 1.0  # after each page: 4 s a walk, past the deadline and Neo4j's next check


def test_a_preview_outlasting_the_deadline_answers_page_by_page_and_confirms_the_send(
    graph: Graph, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    make_campaign(graph, "slow")
    add_members(graph, "slow", [f"p{i:03d}" for i in range(_MEMBERS)])
    settings = DispatchSettings(adult_age=18, max_recipients=_MEMBERS)
    queue = local_queues(tmp_path / "q.sqlite3").dispatch
    # A send of another campaign, without a deadline: the send's statements are planned before the
    # deadline applies, as on a running API (a first plan can take longer than 0.5 s on a busy machine).
    make_campaign(graph, "warm")
    add_members(graph, "warm", ["w1"])
    token = preview_dispatch(graph, campaign_id="warm", now=NOW, settings=settings).preview_token
    dispatch(graph, queue, campaign_id="warm", expected_token=token, now=NOW, settings=settings)
    # Without a deadline or pauses, in one page and then in four: the token is the same whatever the
    # pages, and every statement is planned before the deadline applies, as on a running API.
    expected = preview_dispatch(graph, campaign_id="slow", now=NOW, settings=settings).preview_token
    monkeypatch.setattr(preview_pass, "PREVIEW_PAGE", _PAGE)
    assert preview_dispatch(graph, campaign_id="slow", now=NOW, settings=settings).preview_token == expected
    pages: list[int] = []
    check_cap = preview_pass._check_cap

    def busy_after_each_page(tally: preview_pass.Tally, max_recipients: int) -> None:
        check_cap(tally, max_recipients)
        pages.append(tally.audience)
        time.sleep(_PAUSE)

    monkeypatch.setattr(preview_pass, "_check_cap", busy_after_each_page)
    api = Graph(graph.driver, database=graph.database, unavailable_wait=1.0, tx_timeout=_DEADLINE)

    started = time.monotonic()
    preview = preview_dispatch(api, campaign_id="slow", now=NOW, settings=settings)
    assert time.monotonic() - started > 4 * _PAUSE  # the walk really outlasted the deadline
    assert pages == [50, 100, 150, _MEMBERS]
    assert preview.notification_recipient_count == _MEMBERS and preview.blocked_reason is None
    assert preview.preview_token == expected

    sent = dispatch(api, queue, campaign_id="slow", expected_token=preview.preview_token, now=NOW,
                    settings=settings)  # fmt: skip
    assert sent.channels == ["notify"]
    assert len(pages) == 8  # the send walked the audience again, as slowly, before its lock
    assert len(queue.receive(max_messages=10)) == 2  # the warm send's first page job and this one's
