"""SMTP adapter for the email port: one connection per batch, each message classified by the SMTP stage.

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
- When the connection is lost or the server says 421 (closing), the messages not yet started are
  ``throttled`` with reason ``not_sent``.

We drive ``DATA`` ourselves instead of ``smtplib.SMTP.data`` because that raises the same exception
for a refusal before 354 and after the final dot, and those two mean opposite things here.

Addresses with a non-ASCII local part (``josé@example.com``, accepted by the address grammar) go out
with ``SMTPUTF8`` (RFC 6531) when the relay offers it, headers in raw UTF-8; a relay that does not offer
it gets no command for that message, which is ``rejected`` with reason ``smtputf8_not_offered`` while the
rest of the batch proceeds. ``send_batch`` never raises (the port contract): any unexpected error while
a message is in hand makes that message ``uncertain`` (claim kept) and the ones not yet started
``throttled`` (``not_sent``); a failure to open or set up the session makes every message ``throttled``.
"""

from __future__ import annotations

import logging
import re
import smtplib
import ssl
from collections.abc import Sequence
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate, make_msgid, parseaddr
from typing import Literal

from campaign_engine.delivery.email.provider import (
    Outcome,
    OutgoingEmail,
    ProviderConfigError,
    ProviderUnavailable,
    SendResult,
)

# RFC 5322 allows 998-character lines. The default 78 makes the email package fold a long unsubscribe
# URL into an RFC 2047 encoded word, which mail clients do not parse as List-Unsubscribe.
SMTP_POLICY = SMTP.clone(max_line_length=998)

__all__ = ["SmtpProvider"]

log = logging.getLogger(__name__)

StartTls = Literal["auto", "off", "require"]

# Headers we set ourselves; a caller's header of the same name would make an ambiguous message.
_MANAGED_HEADERS = frozenset(
    {
        "from",
        "to",
        "subject",
        "date",
        "message-id",
        "mime-version",
        "content-type",
        "content-transfer-encoding",
    }
)
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_SAFE_ADDRESS = re.compile(r"^[^\s\x00-\x1f\x7f<>()\[\],;:\"\\@]+@[A-Za-z0-9.-]+$")
# RFC 6531 lets the headers of an SMTPUTF8 message carry raw UTF-8.
_UTF8_POLICY = SMTP_POLICY.clone(utf8=True)


class _ConnectionLost(Exception):
    """The session cannot go on. Carries (outcome, reason) for the message in hand; later ones never left."""


class SmtpProvider:
    """Sends each batch over one SMTP connection to ``host:port``.

    ``starttls``: ``auto`` upgrades when the server offers STARTTLS, ``require`` refuses servers that do
    not, ``off`` never upgrades. Credentials are only sent over TLS, or in clear to a loopback relay.
    ``ssl_context`` overrides certificate checks (tests with a private CA).
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
    ) -> None:
        envelope_from = parseaddr(sender)[1]
        if not (envelope_from.isascii() and _SAFE_ADDRESS.match(envelope_from)):
            raise ProviderConfigError("EMAIL_FROM must be a plain ASCII email address")
        self._host = host
        self._port = port
        self._sender = sender
        self._envelope_from = envelope_from
        self._sender_domain = envelope_from.rsplit("@", 1)[1]
        self._username = username
        self._password = password
        self._starttls = starttls
        self._timeout = timeout
        self._ssl_context = ssl_context
        self.name = f"smtp:{host}:{port}"

    def verify(self) -> None:
        """Connect, negotiate TLS and log in as a send would, then quit."""
        smtp = self._open()
        _quit(smtp)

    def send_batch(self, messages: Sequence[OutgoingEmail]) -> list[SendResult]:
        if not messages:
            return []
        results: dict[int, SendResult] = {}
        built: list[tuple[int, OutgoingEmail, bytes, str]] = []
        for index, message in enumerate(messages):
            try:
                data, message_id = self._build(message)
            except Exception:  # nothing was sent for it: a refusal of this message alone
                results[index] = SendResult(message.key, "rejected", reason="invalid_message")
                continue
            built.append((index, message, data, message_id))
        if built:
            results.update(self._send_built(built))
        return [results[i] for i in range(len(messages))]

    def close(self) -> None:
        """Nothing to release: connections live only for one ``send_batch`` or ``verify``."""

    # --- session ----------------------------------------------------------------------------------

    def _send_built(self, built: list[tuple[int, OutgoingEmail, bytes, str]]) -> dict[int, SendResult]:
        results: dict[int, SendResult] = {}
        try:
            smtp = self._open()
        except Exception as exc:  # no message was started: every one is "not now"
            log.warning("smtp.unreachable", extra={"error": _error_name(exc), "count": len(built)})
            reason = f"connect:{_error_name(exc)}"
            return {i: SendResult(m.key, "throttled", reason=reason) for i, m, _, _ in built}
        utf8 = smtp.has_extn("smtputf8")
        try:
            for position, (index, message, data, message_id) in enumerate(built):
                if not message.to.isascii() and not utf8:
                    results[index] = SendResult(message.key, "rejected", reason="smtputf8_not_offered")
                    continue
                try:
                    results[index] = self._send_one(smtp, message, data, message_id)
                except Exception as exc:  # see the module docstring
                    outcome, reason = (
                        exc.args
                        if isinstance(exc, _ConnectionLost)
                        else ("uncertain", f"error:{_error_name(exc)}")
                    )
                    results[index] = SendResult(message.key, outcome, reason=reason)
                    for later_index, later, _, _ in built[position + 1 :]:
                        results[later_index] = SendResult(later.key, "throttled", reason="not_sent")
                    log.warning("smtp.connection_lost", extra={"reason": reason})
                    return results
        finally:
            _quit(smtp)
        return results

    def _send_one(
        self, smtp: smtplib.SMTP, message: OutgoingEmail, data: bytes, message_id: str
    ) -> SendResult:
        key, to = message.key, message.to
        utf8 = not to.isascii()
        # smtplib encodes commands with ``command_encoding``; UTF-8 only inside an SMTPUTF8 transaction.
        smtp.command_encoding = "utf-8" if utf8 else "ascii"
        code, _ = self._command(smtp, "mail", f"FROM:<{self._envelope_from}>" + (" SMTPUTF8" if utf8 else ""))
        if not 200 <= code < 300:
            return self._refused(smtp, key, code, stage="mail")
        code, _ = self._command(smtp, "rcpt", f"TO:<{to}>")
        if not 200 <= code < 300:  # 250, 251 forwarded, 252 cannot verify but will try
            return self._refused(smtp, key, code, stage="rcpt")
        code, _ = self._command(smtp, "data", "")
        if code != 354:
            return self._refused(smtp, key, code, stage="data")
        # From here on the server holds the message text: only a 250 for the final dot is certain.
        try:
            smtp.send(_dot_stuffed(data))
            code, _ = smtp.getreply()
        except (smtplib.SMTPException, OSError) as exc:
            raise _ConnectionLost("uncertain", f"after_data:{_error_name(exc)}") from exc
        if code == 250:
            return SendResult(key, "accepted", provider_message_id=message_id)
        if code == 421:
            raise _ConnectionLost("uncertain", "after_data:421")
        return SendResult(key, "uncertain", reason=f"after_data:{code}")

    def _command(self, smtp: smtplib.SMTP, verb: str, argument: str) -> tuple[int, bytes]:
        """One command before the message text; a failure here means the message was not taken."""
        try:
            smtp.putcmd(verb, argument)
            code, text = smtp.getreply()
        except (smtplib.SMTPException, OSError) as exc:
            raise _ConnectionLost("throttled", f"{verb}:{_error_name(exc)}") from exc
        if code == 421:
            raise _ConnectionLost("throttled", f"{verb}:421")
        return code, text

    def _refused(self, smtp: smtplib.SMTP, key: str, code: int, *, stage: str) -> SendResult:
        # The message text was never sent, so a refusal here cannot hide an acceptance: 5xx is a
        # definite "no"; 4xx (and any odd reply) is a "not now".
        outcome: Outcome = "rejected" if 500 <= code < 600 else "throttled"
        reason = f"{stage}:{code}"
        try:
            self._command(smtp, "rset", "")
        except _ConnectionLost:
            raise _ConnectionLost(outcome, reason) from None
        return SendResult(key, outcome, reason=reason)

    def _open(self) -> smtplib.SMTP:
        try:
            smtp = smtplib.SMTP(self._host, self._port, timeout=self._timeout)
        except (smtplib.SMTPException, OSError) as exc:
            raise ProviderUnavailable(f"SMTP server could not be reached ({_error_name(exc)})") from exc
        try:
            self._negotiate(smtp)
        except BaseException:
            smtp.close()
            raise
        return smtp

    def _negotiate(self, smtp: smtplib.SMTP) -> None:
        try:
            smtp.ehlo()
            tls = False
            if self._starttls != "off" and smtp.has_extn("starttls"):
                smtp.starttls(context=self._ssl_context or ssl.create_default_context())
                smtp.ehlo()
                tls = True
            if self._starttls == "require" and not tls:
                raise ProviderConfigError("SMTP server does not offer STARTTLS, which is required")
            if self._username is not None:
                if not tls and self._host not in _LOOPBACK:
                    raise ProviderConfigError(
                        "SMTP credentials are only sent over TLS, and the server offers no STARTTLS"
                    )
                _login(smtp, self._username, self._password or "")
        except smtplib.SMTPAuthenticationError as exc:
            raise ProviderConfigError(f"SMTP server rejected the credentials ({exc.smtp_code})") from exc
        except (smtplib.SMTPException, OSError) as exc:
            raise ProviderUnavailable(f"SMTP session setup failed ({_error_name(exc)})") from exc

    def _build(self, message: OutgoingEmail) -> tuple[bytes, str]:
        if not _SAFE_ADDRESS.match(message.to):
            raise ValueError("recipient is not a plain address")
        mime = EmailMessage(policy=SMTP_POLICY if message.to.isascii() else _UTF8_POLICY)
        message_id = make_msgid(domain=self._sender_domain)
        mime["From"] = self._sender
        mime["To"] = message.to
        mime["Subject"] = message.subject
        mime["Date"] = formatdate(localtime=False)
        mime["Message-ID"] = message_id
        for name, value in message.headers.items():
            if name.lower() in _MANAGED_HEADERS:
                raise ValueError(f"header {name} is set by the provider")
            mime[name] = value  # the policy refuses CR/LF in values: no header injection
        mime.set_content(message.text)
        mime.add_alternative(message.html, subtype="html")
        return mime.as_bytes(), message_id


def _login(smtp: smtplib.SMTP, username: str, password: str) -> None:
    """AUTH PLAIN when offered. ``smtplib.login`` falls back to LOGIN after a refusal, and its LOGIN
    answers a server's password challenge with the user name on Python < 3.12, which stalls the session
    until the timeout, hiding "wrong credentials" behind "unreachable"."""
    if "PLAIN" in (smtp.esmtp_features.get("auth") or "").upper().split():
        smtp.user, smtp.password = username, password
        smtp.auth("PLAIN", smtp.auth_plain)
    else:
        smtp.login(username, password)


def _dot_stuffed(data: bytes) -> bytes:
    """RFC 5321 transparency: double leading dots, CRLF line ends, then the terminating dot."""
    data = re.sub(rb"(?:\r\n|\n|\r(?!\n))", b"\r\n", data)
    data = re.sub(rb"(?m)^\.", b"..", data)
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    return data + b".\r\n"


def _quit(smtp: smtplib.SMTP) -> None:
    try:
        smtp.quit()
    except (smtplib.SMTPException, OSError):
        smtp.close()


def _error_name(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timeout"
    cause = exc.__cause__
    if isinstance(exc, ProviderUnavailable) and cause is not None:
        return _error_name(cause)
    return type(exc).__name__
