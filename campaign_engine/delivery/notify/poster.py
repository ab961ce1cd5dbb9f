"""``WebhookPoster``: the ``WebhookSender`` adapter over the safe transport.

The POSTs run on one private event loop shared by every polling thread: a thread pool spent most of
its CPU on GIL hand-offs, an event loop spends it on the requests. A whole batch is in flight at once
(up to the concurrency bound), so nothing waits long between the worker's recheck and its POST, and
right before each POST starts the optional ``SendGate`` is asked whether the campaign is still live.

This is the one place where transport failures become our result types (``_failed``): httpx errors
and ``EgressBlocked`` never travel past it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence

import httpx

from campaign_engine.delivery.notify.gate import SendGate
from campaign_engine.delivery.notify.lcn import BearerTokens
from campaign_engine.delivery.notify.sender import (
    Answered,
    Blocked,
    Outgoing,
    PostResult,
    Skipped,
    TimedOut,
    Unreachable,
    Unreadable,
)
from campaign_engine.domain.webhook_signature import signed_headers
from campaign_engine.egress.policy import EgressBlocked
from campaign_engine.egress.transport import AsyncSafeTransport, ResponseTooLarge
from campaign_engine.observability import metrics
from campaign_engine.observability.metrics import WebhookResult

__all__ = ["WebhookPoster"]

log = logging.getLogger(__name__)


def _new_event_loop() -> asyncio.AbstractEventLoop:
    try:  # uvloop ships with uvicorn[standard]; the POST loop is pure overhead otherwise
        import uvloop
    except ImportError:  # pragma: no cover - a platform without uvloop
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class WebhookPoster:
    """Signed webhook POSTs, callable from any thread, run concurrently on one private event loop.

    At most ``concurrency`` POSTs are in flight across all callers. Each request is signed right before
    it is sent (fresh ``webhook-timestamp`` per attempt, so a POST that waited for its slot is not
    stale) with the item's own receiver secrets, or ``secret`` for the default receiver, and goes
    through ``AsyncSafeTransport.post`` (``timeout`` bounds resolution and connect, then the answer).
    Transport failures come back as result values; anything else is a bug and raises in the caller
    after the batch's other POSTs are cancelled. The poster owns the transport and closes it.
    """

    def __init__(
        self,
        transport: AsyncSafeTransport,
        *,
        secret: str,
        concurrency: int,
        timeout: float,
        wall_clock: Callable[[], float] = time.time,
        gate: SendGate | None = None,
        bearer: BearerTokens | None = None,
    ) -> None:
        # The signature timestamp is wall time because receivers check it against their own clocks.
        self._transport = transport
        self._gate = gate
        self._timeout = timeout
        self._secret = secret
        self._wall_clock = wall_clock
        self._bearer = bearer  # the engine's DID-auth tokens, for LearnCard-format items
        self._loop = _new_event_loop()
        self._semaphore = asyncio.Semaphore(max(1, concurrency))
        self._thread = threading.Thread(target=self._loop.run_forever, name="webhook-loop", daemon=True)
        self._thread.start()
        self._closed = False

    def post_all(self, items: Sequence[Outgoing]) -> list[PostResult]:
        """POST every item concurrently; results in the order of ``items``."""
        if not items:
            return []
        return asyncio.run_coroutine_threadsafe(self._post_all(items), self._loop).result()

    def close(self) -> None:
        """Close the transport's connections and stop the loop; idempotent."""
        if self._closed:
            return
        self._closed = True
        asyncio.run_coroutine_threadsafe(self._transport.aclose(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _post_all(self, items: Sequence[Outgoing]) -> list[PostResult]:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self._post(item)) for item in items]
        return [task.result() for task in tasks]

    async def _post(self, item: Outgoing) -> PostResult:
        async with self._semaphore:
            if self._gate is not None and item.campaign is not None:
                try:
                    if not await self._gate.allows(item.campaign):
                        return Skipped(retry=False)
                except Exception:  # the graph cannot say: do not post now, the queue retries it
                    log.warning("notify.gate_unavailable delivery_id=%s", item.msg_id)
                    return Skipped(retry=True)
            if item.learncard:  # LearnCard's inbox authenticates the sender's DID, not a shared secret
                if self._bearer is None:
                    raise RuntimeError("a LearnCard-format POST needs the engine's DID (CAMPAIGN_DID_KEY)")
                headers = {"authorization": f"Bearer {self._bearer.for_url(item.url)}"}
            else:
                secrets = item.secrets or self._secret  # a receiver's own secrets, else the default inbox's
                headers = signed_headers(
                    secrets, msg_id=item.msg_id, body=item.body, now=int(self._wall_clock())
                )
            headers["content-type"] = "application/json"
            started = time.perf_counter()
            result = await self._exchange(item, list(headers.items()))
            metrics.webhook_post(_RESULT_LABELS[type(result)], time.perf_counter() - started)
            return result

    async def _exchange(self, item: Outgoing, headers: list[tuple[str, str]]) -> PostResult:
        try:
            # The whole (capped) answer is read before this returns: nothing is streamed.
            status, answer_headers, body = await self._transport.post(
                item.url, item.body, headers, timeout=self._timeout
            )
        except (EgressBlocked, httpx.HTTPError) as exc:
            return _failed(exc)
        content_type = next(
            (v.decode("latin-1") for k, v in answer_headers if k.lower() == b"content-type"), None
        )
        return Answered(status, body, content_type)


_RESULT_LABELS: dict[type[PostResult], WebhookResult] = {
    Answered: "answered",
    Blocked: "blocked",
    Unreachable: "unreachable",
    Unreadable: "unreadable",
    TimedOut: "timed_out",
}


def _failed(exc: EgressBlocked | httpx.HTTPError) -> Blocked | Unreachable | Unreadable | TimedOut:
    """The one translation of transport failures. Reasons name the error class, never the URL."""
    if isinstance(exc, EgressBlocked):
        return Blocked(exc.reason)
    if isinstance(exc, httpx.TimeoutException):
        return TimedOut()
    if isinstance(exc, ResponseTooLarge | httpx.RemoteProtocolError):
        return Unreadable(type(exc).__name__)
    # ConnectError (no address, refused, TLS), LocalProtocolError (an unsendable header): never sent.
    return Unreachable(type(exc).__name__)
