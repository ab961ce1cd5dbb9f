"""SMTP adapter for the email port: pooled, pipelined sessions, each message classified by the SMTP stage.

SMTP tells us exactly how far a message got, so the outcome follows the stage it stopped at:

- Connection, TLS or login failure before any message data: ``throttled`` for every message. Nothing
  was sent, so the message cannot have been accepted and releasing the claim cannot duplicate it; the
  worker backs off as it would for a busy provider instead of counting failures (docs/architecture.md
  "Back-pressure is not failure"). The ``reason`` (``connect:...``) tells an operator it is not a 429.
- MAIL/RCPT/DATA-command answered 421/450/451/452 (or any 4xx): ``throttled``; answered 5xx:
  ``rejected``. The server refused before it had the message.
- After the message text was sent (``DATA`` answered 354), anything but a 250 for the final dot, and
  any timeout or disconnect while waiting for it, is ``uncertain``. Even a 4xx/5xx there is treated as
  unknown: some servers queue first and answer late, and a duplicate announcement is worse than a miss.
- When the connection is lost or the server says 421 (closing), the messages not yet started on it
  are ``throttled`` with reason ``not_sent``.

A batch is spread over up to ``SMTP_MAX_CONNECTIONS`` sessions at once (``smtp_pool.py``),
each a contiguous run of at least ``_MIN_RUN`` messages (so a small batch keeps one connection), and
sessions stay open across batches. With PIPELINING a message costs one round trip instead of four
(``smtp_session.py``). All I/O runs on one private event loop per provider; ``send_batch`` blocks the
calling thread until every message of the batch has its outcome.

Addresses with a non-ASCII local part (``josé@example.com``, accepted by the address grammar) go out
with ``SMTPUTF8`` (RFC 6531) when the relay offers it, headers in raw UTF-8; a relay that does not offer
it gets no command for that message, which is ``rejected`` with reason ``smtputf8_not_offered`` while the
rest of the batch proceeds. ``send_batch`` never raises (the port contract): any unexpected error while
a message is in hand makes that message ``uncertain`` (claim kept) and the ones not yet started
``throttled`` (``not_sent``); a failure to open or set up the session makes every message ``throttled``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import replace
from email.utils import formatdate, make_msgid, parseaddr
from typing import Any, TypeVar

from campaign_engine.delivery.email.provider import (
    OutgoingEmail,
    ProviderConfigError,
    SendResult,
)
from campaign_engine.delivery.email.smtp_message import SAFE_ADDRESS, PageAssembler
from campaign_engine.delivery.email.smtp_pool import SessionPool
from campaign_engine.delivery.email.smtp_session import (
    Envelope,
    SessionConfig,
    SmtpSession,
    StartTls,
    error_name,
)

__all__ = ["SmtpProvider"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Fewer messages than this per connection would spend more on opening sessions than pipelining saves.
_MIN_RUN = 32
_NONE = SendResult("", "uncertain")
_MAX_SENDERS = 64
"""Per-From assemblers kept across pages (a tenant each, at most)."""


class SmtpProvider:
    """Sends batches over a pool of up to ``max_connections`` SMTP sessions to ``host:port``.

    ``starttls``: ``auto`` upgrades when the server offers STARTTLS, ``require`` refuses servers that do
    not, ``off`` never upgrades. Credentials are only sent over TLS, or in clear to a loopback relay.
    ``ssl_context`` overrides certificate checks (tests with a private CA). A session carries at most
    ``max_messages_per_connection`` messages and is closed after ``idle_seconds`` unused.
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        sender: str,
        username: str | None = None,
        password: str | None = None,
        starttls: StartTls = "auto",
        timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 8,
        max_messages_per_connection: int = 1000,
        idle_seconds: float = 10.0,
    ) -> None:
        envelope_from = parseaddr(sender)[1]
        if not (envelope_from.isascii() and SAFE_ADDRESS.match(envelope_from)):
            raise ProviderConfigError("EMAIL_FROM must be a plain ASCII email address")
        self._sender = sender
        self._sender_domain = envelope_from.rsplit("@", 1)[1]
        self._config = SessionConfig(
            host=host,
            port=port,
            envelope_from=envelope_from,
            local_hostname="localhost",  # set when the loop starts: getfqdn may ask DNS
            username=username,
            password=password,
            starttls=starttls,
            timeout=timeout,
            ssl_context=ssl_context,
        )
        self._max_connections = max_connections
        self._max_messages = max_messages_per_connection
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pool: SessionPool | None = None
        self._assemblers: dict[str, PageAssembler] = {}
        self.name = f"smtp:{host}:{port}"

    def verify(self) -> None:
        """Connect, negotiate TLS and log in as a send would, then quit."""
        self._run(self._verify())

    def send_batch(self, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
        if not messages:
            return []
        results: dict[str, SendResult] = {}
        envelopes: list[Envelope] = []
        # The common bytes, built once per From and body across pages: the tenant's sender (its record's
        # emailFrom), else EMAIL_FROM. The envelope sender stays EMAIL_FROM's, the address the relay lets
        # us use.
        date = formatdate(localtime=False)
        for message in messages:
            message_id = make_msgid(domain=self._sender_domain)
            assembler = self._assembler(message.sender or self._sender)
            try:
                text = assembler.build(message, message_id=message_id, date=date)
            except Exception:  # nothing was sent for it: a refusal of this message alone
                results[message.key] = SendResult(message.key, "rejected", reason="invalid_message")
                continue
            envelopes.append(Envelope(message.key, message.to, text, message_id))
        reason = "error:no_result"
        if envelopes:
            try:
                self._run(self._send_all(envelopes, results))
            except Exception as exc:  # a bug outside a session: anything may have gone out
                log.error("smtp.send_failed", extra={"error": error_name(exc)})
                reason = f"error:{error_name(exc)}"
        # Only a bug leaves a message without a result: it may have gone out, so its claim stays.
        return [results.get(m.key) or SendResult(m.key, "uncertain", reason=reason) for m in messages]

    def _assembler(self, sender: str) -> PageAssembler:
        found = self._assemblers.get(sender)
        if found is None:
            if len(self._assemblers) >= _MAX_SENDERS:
                self._assemblers = {}  # a deployment with more senders than this rebuilds more often
            found = self._assemblers.setdefault(sender, PageAssembler(sender=sender))
        return found

    def close(self) -> None:
        """QUIT the idle sessions and stop the loop; the next call starts a new one."""
        with self._lock:
            loop, thread, pool = self._loop, self._thread, self._pool
            self._loop = self._thread = self._pool = None
        if loop is None or thread is None or pool is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(pool.close(), loop).result(timeout=self._config.timeout + 5)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    # --- sessions ---------------------------------------------------------------------------------

    async def _verify(self) -> None:
        session = await SmtpSession.open(self._config)
        await session.quit()

    async def _send_all(self, envelopes: list[Envelope], results: dict[str, SendResult]) -> None:
        assert self._pool is not None
        pool = self._pool
        runs = max(1, min(self._max_connections, len(envelopes) // _MIN_RUN))
        size = -(-len(envelopes) // runs)
        chunks = [envelopes[i : i + size] for i in range(0, len(envelopes), size)]
        await asyncio.gather(*(self._send_chunk(pool, chunk, results) for chunk in chunks))

    async def _send_chunk(
        self, pool: SessionPool, chunk: list[Envelope], results: dict[str, SendResult]
    ) -> None:
        position = 0
        while position < len(chunk):
            try:
                session = await pool.acquire()
            except Exception as exc:  # no message of the rest was started: every one is "not now"
                log.warning(
                    "smtp.unreachable", extra={"error": error_name(exc), "count": len(chunk) - position}
                )
                reason = f"connect:{error_name(exc)}"
                for envelope in chunk[position:]:
                    results[envelope.key] = SendResult(envelope.key, "throttled", reason=reason)
                return
            run = chunk[position : position + pool.room(session)]
            reused, alive = session.messages > 0, False
            try:
                alive = await session.send_run(run, results)
            except Exception as exc:  # a bug with messages in hand: they may have gone out
                log.warning("smtp.session_failed", extra={"error": error_name(exc)})
                for envelope in run:
                    if envelope.key not in results:
                        results[envelope.key] = SendResult(
                            envelope.key, "uncertain", reason=f"error:{error_name(exc)}"
                        )
            finally:
                pool.release(session, reusable=alive)
            if not alive and reused and session.answered == 0:
                # An idle session the relay had dropped unnoticed: nothing was answered, so no text
                # went out; the run starts again on another session (a new one is never retried).
                for envelope in run:
                    if results.get(envelope.key, _NONE).outcome == "throttled":
                        del results[envelope.key]
                continue
            position += len(run)
            if not alive:
                log.warning("smtp.connection_lost", extra={"count": len(chunk) - position})
                for envelope in chunk:
                    if envelope.key not in results:
                        results[envelope.key] = SendResult(envelope.key, "throttled", reason="not_sent")
                return

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        loop = self._started()
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                fqdn = socket.getfqdn()
                self._config = replace(self._config, local_hostname=fqdn if "." in fqdn else "localhost")
                loop = _new_event_loop()
                self._pool = SessionPool(
                    lambda: SmtpSession.open(self._config),
                    max_connections=self._max_connections,
                    max_messages=self._max_messages,
                    idle_seconds=self._idle_seconds,
                )
                self._thread = threading.Thread(target=loop.run_forever, name="smtp-loop", daemon=True)
                self._thread.start()
                self._loop = loop
            return self._loop


def _new_event_loop() -> asyncio.AbstractEventLoop:
    try:  # uvloop ships with uvicorn[standard]; as in notify/poster.py
        import uvloop
    except ImportError:  # pragma: no cover - a platform without uvloop
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
