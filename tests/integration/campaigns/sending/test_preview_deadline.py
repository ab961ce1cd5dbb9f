"""A large send's preview on a busy API: each page of the audience walk is a statement of its own under
the API's deadline, so a preview whose pages together outlast the deadline still answers, and so do the
confirmations that walk it again before the campaign's lock (dispatch, approveDispatch,
scheduleDispatch), each with the token of the one-page walk.

The API being busy between pages (its interpreter shared with app traffic, an export and an import)
is played by a pause after each page, which is what that does to one long transaction: Neo4j counts a
transaction's deadline from its start, whatever the client was doing. Neo4j checks deadlines about
every 2 s, so the pauses add up to well past the 0.5 s deadline and that check."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.sending import preview_pass
from campaign_engine.campaigns.sending.approve import approve_dispatch
from campaign_engine.campaigns.sending.dispatch import dispatch, preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.schedule import schedule_dispatch
from campaign_engine.campaigns.sending.schedule_input import ScheduleInput
from campaign_engine.graph.graph import Graph
from tests.support.delivery import NOW, add_members, local_queues, make_campaign

_DEADLINE = 0.5
_PAGE = 50
_MEMBERS = 3 * _PAGE + 7  # four pages
_PAUSE = 1.0  # after each page: 4 s a walk, past the deadline and Neo4j's next check
_SETTINGS = DispatchSettings(adult_age=18, max_recipients=_MEMBERS)

Confirm = Callable[[Graph, str, str, Path], Any]


def _dispatch(graph: Graph, campaign_id: str, token: str, tmp_path: Path) -> Any:
    queue = local_queues(tmp_path / "q.sqlite3").dispatch
    return dispatch(graph, queue, campaign_id=campaign_id, expected_token=token, now=NOW, settings=_SETTINGS)


def _approve(graph: Graph, campaign_id: str, token: str, tmp_path: Path) -> Any:
    return approve_dispatch(graph, campaign_id=campaign_id, preview_token=token, approver="second",
                            now=NOW, settings=_SETTINGS)  # fmt: skip


def _schedule(graph: Graph, campaign_id: str, token: str, tmp_path: Path) -> Any:
    data = ScheduleInput.model_validate(
        {"campaignId": campaign_id, "sendAt": NOW + timedelta(hours=1), "expectedPreviewToken": token}
    )
    return schedule_dispatch(graph, data=data, now=NOW, settings=_SETTINGS)


@pytest.mark.parametrize("confirm", [_dispatch, _approve, _schedule], ids=["dispatch", "approve", "schedule"])
def test_a_walk_outlasting_the_deadline_answers_page_by_page_and_confirms(
    graph: Graph, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, confirm: Confirm
) -> None:
    make_campaign(graph, "slow")
    add_members(graph, "slow", [f"p{i:03d}" for i in range(_MEMBERS)])
    # A confirmation of another campaign and the walk in one page and in four, without a deadline or
    # pauses: every statement is planned before the deadline applies (as on a running API; a first plan
    # can take longer than 0.5 s on a busy machine), and the token is the same whatever the pages.
    make_campaign(graph, "warm")
    add_members(graph, "warm", ["w1"])
    warm = preview_dispatch(graph, campaign_id="warm", now=NOW, settings=_SETTINGS)
    confirm(graph, "warm", warm.preview_token, tmp_path)
    expected = preview_dispatch(graph, campaign_id="slow", now=NOW, settings=_SETTINGS).preview_token
    monkeypatch.setattr(preview_pass, "PREVIEW_PAGE", _PAGE)
    assert preview_dispatch(graph, campaign_id="slow", now=NOW, settings=_SETTINGS).preview_token == expected

    pages: list[int] = []
    check_cap = preview_pass._check_cap

    def busy_after_each_page(tally: preview_pass.Tally, max_recipients: int) -> None:
        check_cap(tally, max_recipients)
        pages.append(tally.audience)
        time.sleep(_PAUSE)

    monkeypatch.setattr(preview_pass, "_check_cap", busy_after_each_page)
    api = Graph(graph.driver, database=graph.database, unavailable_wait=1.0, tx_timeout=_DEADLINE)

    started = time.monotonic()
    preview = preview_dispatch(api, campaign_id="slow", now=NOW, settings=_SETTINGS)
    assert time.monotonic() - started > 4 * _PAUSE  # the walk really outlasted the deadline
    assert pages == [50, 100, 150, _MEMBERS]
    assert preview.notification_recipient_count == _MEMBERS and preview.blocked_reason is None
    assert preview.preview_token == expected

    assert confirm(api, "slow", expected, tmp_path) is not None
    assert len(pages) == 8  # the confirmation walked the audience again, as slowly, before its lock
