"""One SMTP client connection on asyncio: setup (EHLO, STARTTLS, AUTH) and runs of pipelined messages.

Hand-written rather than aiosmtplib or smtplib: neither pipelines (RFC 2920), and bolting
PIPELINING onto smtplib measured slower than lock-step. This module is only the part of the protocol
the provider needs: a transaction per message of one MAIL, one RCPT and DATA.

With PIPELINING, a message costs one round trip: its text, the next message's MAIL/RCPT/DATA (and an
RSET after a refusal) go in one write, and the replies come back in order. Without it, each command
waits for its reply (lock-step). Either way each message is classified by the stage it stopped at, as
``smtp.py``'s docstring describes; the one rule pipelining adds is that a message whose text was never
written cannot have been accepted, so a connection lost while its envelope was in flight is a "not
now" (``throttled``), and only the message whose text was written and not yet answered is
``uncertain``. One module past 350 lines on purpose: the session's states and their classification
read as one state machine.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import smtplib
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from campaign_engine.delivery.email.provider import (
    Outcome,
    ProviderConfigError,
    ProviderUnavailable,
    SendResult,
)

__all__ = ["Envelope", "SessionConfig", "SmtpSession", "error_name"]

StartTls = Literal["auto", "off", "require"]
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_Step = Literal["dot", "rset", "mail", "rcpt", "data"]


@dataclass(frozen=True)
class Envelope:
    """One built message: its recipient, its dot-stuffed text (ending ``.\\r\\n``) and our Message-ID."""

    key: str
    to: str
    text: bytes
    message_id: str

    @property
    def utf8(self) -> bool:
        return not self.to.isascii()


@dataclass(frozen=True)
class SessionConfig:
    host: str
    port: int
    envelope_from: str
    local_hostname: str
    username: str | None
    password: str | None
    starttls: StartTls
    timeout: float
    ssl_context: ssl.SSLContext | None


class _Lost(Exception):
    """The connection cannot go on; ``reason`` names the step and the error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SmtpSession:
    """An open, set-up connection. Use from one task at a time (the pool hands it out)."""

    def __init__(
        self, config: SessionConfig, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._config = config
        self._reader = reader
        self._writer = writer
        self.features: dict[str, str] = {}
        self.messages = 0
        """Messages whose MAIL went out on this connection (the per-connection limit counts these)."""
        self.last_used = time.monotonic()
        self._rset = False  # a refused envelope left a transaction open: RSET before the next MAIL
        self._step: _Step = "mail"  # what the current group waits on
        self.answered = 0
        """Replies read during the last ``send_run``: none means no message text was written."""

    @property
    def pipelining(self) -> bool:
        return "pipelining" in self.features

    @property
    def smtputf8(self) -> bool:
        return "smtputf8" in self.features

    @property
    def usable(self) -> bool:
        """False once the server closed its side (a relay's idle timeout: 421, then close)."""
        return not (self._writer.is_closing() or self._reader.at_eof())

    # --- setup -------------------------------------------------------------------------------------

    @classmethod
    async def open(cls, config: SessionConfig) -> SmtpSession:
        """Connect, greet, STARTTLS and log in. Raises ProviderUnavailable / ProviderConfigError."""
        try:
            async with asyncio.timeout(config.timeout):
                reader, writer = await asyncio.open_connection(config.host, config.port)
        except OSError as exc:  # TimeoutError included
            raise ProviderUnavailable(f"SMTP server could not be reached ({error_name(exc)})") from exc
        session = cls(config, reader, writer)
        try:
            await session._negotiate()
        except BaseException:
            session.abort()
            raise
        return session

    async def _negotiate(self) -> None:
        config = self._config
        try:
            code, _ = await self._reply()
            if code != 220:
                raise smtplib.SMTPConnectError(code, b"greeting")
            await self._ehlo()
            tls = False
            if config.starttls != "off" and "starttls" in self.features:
                code, _ = await self._command(b"STARTTLS\r\n")
                if code != 220:
                    raise smtplib.SMTPResponseException(code, b"STARTTLS")
                async with asyncio.timeout(config.timeout):
                    await self._writer.start_tls(
                        config.ssl_context or ssl.create_default_context(), server_hostname=config.host
                    )
                await self._ehlo()
                tls = True
            if config.starttls == "require" and not tls:
                raise ProviderConfigError("SMTP server does not offer STARTTLS, which is required")
            if config.username is not None:
                if not tls and config.host not in _LOOPBACK:
                    raise ProviderConfigError(
                        "SMTP credentials are only sent over TLS, and the server offers no STARTTLS"
                    )
                await self._login(config.username, config.password or "")
        except smtplib.SMTPAuthenticationError as exc:
            raise ProviderConfigError(f"SMTP server rejected the credentials ({exc.smtp_code})") from exc
        except (smtplib.SMTPException, OSError, ValueError) as exc:
            raise ProviderUnavailable(f"SMTP session setup failed ({error_name(exc)})") from exc

    async def _ehlo(self) -> None:
        code, lines = await self._command(b"EHLO %s\r\n" % self._config.local_hostname.encode())
        self.features = {}
        if code != 250:  # an old server: HELO, no extensions
            code, _ = await self._command(b"HELO %s\r\n" % self._config.local_hostname.encode())
            if code != 250:
                raise smtplib.SMTPHeloError(code, b"HELO")
            return
        for line in lines[1:]:
            keyword, _, params = line.decode("ascii", "replace").partition(" ")
            self.features[keyword.lower()] = params.strip()

    async def _login(self, username: str, password: str) -> None:
        """AUTH PLAIN, else LOGIN, else CRAM-MD5 (smtplib's set); any answer but 235 is a refusal."""
        offered = self.features.get("auth", "").upper().split()
        if "PLAIN" in offered:
            token = base64.b64encode(f"\0{username}\0{password}".encode())
            code, _ = await self._command(b"AUTH PLAIN " + token + b"\r\n")
        elif "LOGIN" in offered:
            code, _ = await self._command(b"AUTH LOGIN\r\n")
            for answer in (username, password):
                if code != 334:
                    break
                code, _ = await self._command(base64.b64encode(answer.encode()) + b"\r\n")
        elif "CRAM-MD5" in offered:
            code, lines = await self._command(b"AUTH CRAM-MD5\r\n")
            if code == 334:
                challenge = base64.b64decode(lines[0][4:])
                digest = hmac.new(password.encode(), challenge, "md5").hexdigest()
                code, _ = await self._command(base64.b64encode(f"{username} {digest}".encode()) + b"\r\n")
        else:
            raise smtplib.SMTPNotSupportedError("AUTH not offered")
        if code != 235:
            raise smtplib.SMTPAuthenticationError(code, b"AUTH")

    # --- messages ----------------------------------------------------------------------------------

    async def send_run(self, envelopes: Sequence[Envelope], results: dict[str, SendResult]) -> bool:
        """Send ``envelopes`` in order, writing each outcome into ``results`` as it becomes known.

        Returns whether the connection can carry more. When it cannot, the messages left without a
        result were never written past their envelope: the caller reports them ``throttled``
        (``not_sent``). Raises nothing but bugs; a bug leaves results missing for the caller to judge.
        """
        pending: Envelope | None = None  # its text is written, its final reply not yet read
        self.answered = 0
        for envelope in envelopes:
            if envelope.utf8 and not self.smtputf8:
                results[envelope.key] = SendResult(envelope.key, "rejected", reason="smtputf8_not_offered")
                continue
            group: list[tuple[_Step, bytes]] = []
            if pending is not None:
                group.append(("dot", pending.text))
            if self._rset:
                group.append(("rset", b"RSET\r\n"))
            group += self._envelope(envelope)
            self.messages += 1
            try:
                pending, self._rset = await self._exchange(group, pending, envelope, results)
            except _Lost as lost:
                self._settle_lost(lost.reason, pending, envelope, results)
                self.abort()
                return False
        if pending is not None:
            try:
                await self._exchange([("dot", pending.text)], pending, None, results)
            except _Lost as lost:
                self._settle_lost(lost.reason, pending, None, results)
                self.abort()
                return False
        self.last_used = time.monotonic()
        return True

    def _envelope(self, envelope: Envelope) -> list[tuple[_Step, bytes]]:
        # The address grammar (checked when the message was built) keeps CR, LF and <> out of ``to``.
        mail = b"MAIL FROM:<%s>%s\r\n" % (
            self._config.envelope_from.encode(),
            b" SMTPUTF8" if envelope.utf8 else b"",
        )
        return [("mail", mail), ("rcpt", b"RCPT TO:<%s>\r\n" % envelope.to.encode()), ("data", b"DATA\r\n")]

    async def _exchange(
        self,
        group: list[tuple[_Step, bytes]],
        pending: Envelope | None,
        envelope: Envelope | None,
        results: dict[str, SendResult],
    ) -> tuple[Envelope | None, bool]:
        """One group's writes and replies, under one timeout. Returns (the message whose text is now
        pending, RSET needed)."""
        self._step = group[0][0]
        try:
            async with asyncio.timeout(self._config.timeout):
                return await self._group(group, pending, envelope, results)
        except TimeoutError as exc:  # the step it was waiting on says what the loss means
            raise _Lost(f"{'after_data' if self._step == 'dot' else self._step}:timeout") from exc

    async def _group(
        self,
        group: list[tuple[_Step, bytes]],
        pending: Envelope | None,
        envelope: Envelope | None,
        results: dict[str, SendResult],
    ) -> tuple[Envelope | None, bool]:
        if self.pipelining:
            await self._write(b"".join(data for _, data in group), group[0][0])
        refusal: tuple[Outcome, str] | None = None
        data_open = False
        for step, data in group:
            if step in ("rcpt", "data") and refusal is not None and not self.pipelining:
                break  # lock-step: nothing more is sent for a refused envelope
            self._step = step
            if not self.pipelining:
                await self._write(data, step)
            code = await self._step_reply(step)
            if step == "dot":
                assert pending is not None
                results[pending.key] = _final(pending, code)
                if code == 421:
                    raise _Lost("after_data:421")
                continue
            if code == 421:  # closing: this envelope's refusal, or this step, is why it did not go
                if envelope is not None and step != "rset":
                    outcome, reason = refusal or ("throttled", f"{step}:421")
                    results[envelope.key] = SendResult(envelope.key, outcome, reason=reason)
                raise _Lost(f"{step}:421")
            if step == "rset":
                continue
            ok = code == 354 if step == "data" else 200 <= code < 300  # 251 forwarded, 252 will try
            if step == "data" and ok:
                data_open = True
            elif not ok and refusal is None:
                # The text was never sent, so a refusal cannot hide an acceptance: 5xx is a definite
                # "no"; 4xx (and any odd reply) is a "not now".
                refusal = ("rejected" if 500 <= code < 600 else "throttled", f"{step}:{code}")
        if envelope is None:
            return None, False
        if refusal is None:
            return envelope, False
        results[envelope.key] = SendResult(envelope.key, refusal[0], reason=refusal[1])
        if data_open:  # a server that opened DATA for a refused envelope: leave rather than send it
            raise _Lost("data:open_after_refusal")
        return None, True

    async def _step_reply(self, step: _Step) -> int:
        try:
            code, _ = await self._read_reply()
        except (OSError, ValueError, smtplib.SMTPException) as exc:
            raise _Lost(f"{'after_data' if step == 'dot' else step}:{error_name(exc)}") from exc
        self.answered += 1
        return code

    async def _write(self, data: bytes, step: _Step) -> None:
        try:
            self._writer.write(data)
            await self._writer.drain()
        except OSError as exc:
            raise _Lost(f"{'after_data' if step == 'dot' else step}:{error_name(exc)}") from exc

    @staticmethod
    def _settle_lost(
        reason: str, pending: Envelope | None, envelope: Envelope | None, results: dict[str, SendResult]
    ) -> None:
        """The connection died: the message whose text went out unanswered is uncertain, and the one
        whose envelope was in flight never had its text sent (throttled, unless it was already judged)."""
        if pending is not None and pending.key not in results:
            results[pending.key] = SendResult(pending.key, "uncertain", reason=reason)
        if envelope is not None and envelope.key not in results:
            # Lost on the previous message's text or its RSET: this one's envelope never counted.
            mine = not reason.startswith(("after_data:", "rset:"))
            results[envelope.key] = SendResult(
                envelope.key, "throttled", reason=reason if mine else "not_sent"
            )

    # --- wire --------------------------------------------------------------------------------------

    async def _command(self, line: bytes) -> tuple[int, list[bytes]]:
        self._writer.write(line)
        return await self._reply()

    async def _reply(self) -> tuple[int, list[bytes]]:
        async with asyncio.timeout(self._config.timeout):
            return await self._read_reply()

    async def _read_reply(self) -> tuple[int, list[bytes]]:
        """One (possibly multi-line) reply; a malformed code reads as -1, as smtplib does."""
        line = await self._reader.readline()
        lines = [line]
        while line[3:4] == b"-" and line.endswith(b"\n"):
            line = await self._reader.readline()
            lines.append(line)
        if not line.endswith(b"\n"):
            raise smtplib.SMTPServerDisconnected("connection closed")
        head = line[:3]
        return (int(head) if head.isdigit() else -1), [line[4:].rstrip(b"\r\n") for line in lines]

    async def quit(self) -> None:
        try:
            self._writer.write(b"QUIT\r\n")
            async with asyncio.timeout(min(self._config.timeout, 2.0)):
                await self._reader.readline()
        except (OSError, ValueError):
            pass
        self.abort()

    def abort(self) -> None:
        self._writer.transport.abort()


def _final(envelope: Envelope, code: int) -> SendResult:
    """The reply to the final dot: only a 250 is certain. Anything else may hide an acceptance (some
    servers queue first and answer late), so it is ``uncertain``: a duplicate is worse than a miss."""
    if code == 250:
        return SendResult(envelope.key, "accepted", provider_message_id=envelope.message_id)
    return SendResult(envelope.key, "uncertain", reason=f"after_data:{code}")


def error_name(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timeout"
    cause = exc.__cause__
    if isinstance(exc, ProviderUnavailable) and cause is not None:
        return error_name(cause)
    return type(exc).__name__
