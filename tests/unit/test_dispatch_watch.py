"""``campaign_engine/watch.py`` against scripted API answers (httpx MockTransport) and a stepping clock:
rates over the sliding window, counters the watch does not know, sibling channels, the TTY panel and
the exit statuses. The real API, worker and graph are in tests/e2e/test_dispatch_watch.py."""

from __future__ import annotations

import io
import json
from typing import Any

import httpx

from campaign_engine.watch import ApiClient, watch_dispatch

CREATED = "2026-01-01T00:00:00.000000Z"
STARTED = "2026-01-02T00:00:00.000000Z"


def dispatch(dispatch_id: str, channel: str, status: str, **counters: Any) -> dict[str, Any]:
    base = {"pages": 0, "enqueued": 0, "acknowledged": 0, "rejected": 0, "suppressed": 0, "emailed": 0,
            "throttled": 0, "uncertain": 0, "maxLateSeconds": 3600}  # fmt: skip
    return {"dispatchId": dispatch_id, "campaignId": "c1", "campaignCreatedAt": CREATED, "channel": channel,
            "status": status, "startedAt": STARTED, **base, **counters}  # fmt: skip


class Script:
    """Answers each poll with the next list of dispatches (the first is the watched one); the last repeats."""

    def __init__(self, polls: list[list[dict[str, Any]]]) -> None:
        self.polls = polls
        self.asked = 0
        self.headers: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.headers.append(request.headers["authorization"])
        current = self.polls[min(self.asked // 2, len(self.polls) - 1)]
        self.asked += 1
        if request.url.path.endswith("getDispatch"):
            wanted = json.loads(request.url.params["input"])["dispatchId"]
            found = [d for d in current if d["dispatchId"] == wanted]
            if not found:
                error = {"message": f"dispatch '{wanted}' not found", "code": -32004,
                         "data": {"code": "NOT_FOUND", "httpStatus": 404}}  # fmt: skip
                return httpx.Response(404, json={"error": error})
            return httpx.Response(200, json={"result": {"data": found[0]}})
        return httpx.Response(200, json={"result": {"data": current}})


class Steps:
    """A clock that moves one second per sleep."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += 1.0


def run(script: Script, dispatch_id: str = "d-n", *, terminal: bool = False) -> tuple[int, str, str]:
    out, err, clock = io.StringIO(), io.StringIO(), Steps()
    client = ApiClient("http://api.test", "secret-token", transport=httpx.MockTransport(script))
    code = watch_dispatch(client, dispatch_id, out=out, err=err, interval=1.0, retries=2,
                          settle_seconds=5, force_terminal=terminal, clock=lambda: clock.now,
                          sleep=clock.sleep)  # fmt: skip
    return code, out.getvalue(), err.getvalue()


def test_plain_lines_show_both_channels_rates_and_unknown_counters_until_completed() -> None:
    older = dispatch("d-old", "notify", "completed", startedAt="2025-01-01T00:00:00.000000Z")
    wave = "2026-01-02T00:01:00Z"
    script = Script([
        [dispatch("d-n", "notify", "sending", pages=1, enqueued=10), dispatch("d-e", "email", "sending"),
         older],
        [dispatch("d-n", "notify", "sending", pages=1, enqueued=10, acknowledged=10, nextPageAt=wave),
         dispatch("d-e", "email", "sending", pages=1, emailed=4, deferred=3), older],
        [dispatch("d-n", "notify", "completed", pages=2, enqueued=20, acknowledged=20),
         dispatch("d-e", "email", "completed", pages=2, emailed=8, capped=2), older],
    ])  # fmt: skip
    code, out, err = run(script)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    notify = [line for line in lines if " d-n notify " in line]
    assert [line.split(" ", 1)[1] for line in notify] == [
        "d-n notify sending 0/10 settled pages=1 enqueued=10 rate=0.0/s",
        "d-n notify sending 10/10 settled pages=1 enqueued=10 acknowledged=10 nextPageAt=2026-01-02T00:01:00Z"
        " rate=10.0/s",
        "d-n notify completed 20/20 settled pages=2 enqueued=20 acknowledged=20 rate=10.0/s",
    ]
    email = [line for line in lines if " d-e email " in line]
    assert "emailed=4 deferred=3 rate=4.0/s" in email[1]  # a counter this client never heard of
    assert "emailed=8 capped=2 rate=4.0/s" in email[2]
    assert not any("d-old" in line or "maxLateSeconds" in line for line in lines)
    assert lines[-1] == "completed: notify 20, email 8 settled"
    assert set(script.headers) == {"Bearer secret-token"}
    assert "secret-token" not in out


def test_the_terminal_panel_redraws_a_bar_per_channel() -> None:
    failed = dispatch("d-e", "email", "failed", lastError="no email provider is configured")
    script = Script([[dispatch("d-n", "notify", "completed", pages=1, enqueued=4, acknowledged=4), failed]])
    code, out, _ = run(script, terminal=True)
    assert code == 1
    assert "━" in out and "\x1b[" in out  # a drawn bar, with terminal control sequences
    assert "4/4" in out and "last error: no email provider is configured" in out
    assert "email dispatch d-e failed: no email provider is configured" in out


def test_deliveries_in_flight_are_awaited_then_reported() -> None:
    script = Script([[dispatch("d-n", "notify", "completed", pages=1, enqueued=5, acknowledged=3)]])
    code, out, _ = run(script)
    assert code == 0
    assert out.splitlines()[-1] == "completed: notify 3 settled (2 deliveries still awaiting their receiver)"


def test_an_unknown_id_and_an_api_that_stays_away_end_with_a_message() -> None:
    code, _, err = run(Script([[]]), "d-missing")
    assert code == 3 and "NOT_FOUND: dispatch 'd-missing' not found" in err

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    client = ApiClient("http://api.test", "t", transport=httpx.MockTransport(down))
    err_io, clock = io.StringIO(), Steps()
    code = watch_dispatch(client, "d-n", out=io.StringIO(), err=err_io, retries=2, clock=lambda: clock.now,
                          sleep=clock.sleep)  # fmt: skip
    assert code == 3
    assert err_io.getvalue().splitlines()[-1] == (
        "cannot reach the API at http://api.test: connection refused; gave up after 3 attempts"
    )
