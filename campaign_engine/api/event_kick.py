"""After a request whose transaction queued webhook events, start their relay (``delivery/relay_kick.py``).

An ASGI middleware around every HTTP route (tRPC, imports, unsubscribe pages, provider feedback): the
request runs in a ``touched_scope`` (the threads its handlers run in share it), and once the app has
answered, so after the request's commits, a kick sends the touched endpoints' relay jobs at once, in a
worker thread (the queue's send is I/O and never runs on the event loop). Endpoints a background writer
touched (the click recorder's thread) go with it, a second later. Asking whether anything was touched
costs no I/O, so a request that recorded nothing pays nothing. A failing kick never fails the
request: the answer has gone; the failure is logged and the sweep makes up for it. Under Mangum (the
Lambda handler) the answer returns when the app does, so there the kick adds one queue send to the
requests that recorded events, and none is left to a thread a frozen container would not run.
"""

from __future__ import annotations

import logging

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from campaign_engine.delivery.relay_kick import RelayKick
from campaign_engine.graph.webhook_outbox import touched_scope

__all__ = ["KickAfterEvents"]

log = logging.getLogger(__name__)


class KickAfterEvents:
    def __init__(self, app: ASGIApp, kick: RelayKick) -> None:
        self.app = app
        self.kick = kick

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with touched_scope() as touched:
            try:
                await self.app(scope, receive, send)
            finally:
                if self.kick.due(touched):
                    try:
                        await run_in_threadpool(self.kick.kick, set(touched))
                    except Exception:  # the answer has gone: the sweep delivers these events instead
                        log.exception("webhooks.kick_failed")
