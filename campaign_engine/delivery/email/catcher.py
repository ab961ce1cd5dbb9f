"""A local SMTP catcher for ``make dev``: accepts every message and writes it to a folder as ``.eml``.

With ``CAMPAIGN_EMAIL_PROVIDER=smtp`` pointed at it (``SMTP_HOST=127.0.0.1``, ``SMTP_PORT=1025``), a
developer reads exactly what a real send would have handed to a relay, headers included
(List-Unsubscribe and its token). It relays nothing, so it is safe to run against any data. Addresses
are never logged; the files are the record. It offers SMTPUTF8 like common relays (Postfix, Exim), so
a non-ASCII address arrives as a real relay would take it; ``smtputf8=False`` stands in for a relay that
does not (the provider then rejects that one recipient).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

__all__ = ["MailboxHandler", "serve_smtp_catcher", "start_smtp_catcher"]

log = logging.getLogger(__name__)


class MailboxHandler:
    """aiosmtpd handler: one ``<time>-<id>.eml`` file per accepted message, written atomically."""

    def __init__(self, mailbox_dir: Path) -> None:
        self.mailbox_dir = mailbox_dir
        mailbox_dir.mkdir(parents=True, exist_ok=True)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # aiosmtpd hook name
        content: bytes = envelope.original_content or envelope.content
        name = f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}-{uuid.uuid4().hex[:8]}.eml"
        partial = self.mailbox_dir / f".{name}.part"
        partial.write_bytes(content)
        os.replace(partial, self.mailbox_dir / name)
        log.info("smtp_catcher.stored file=%s bytes=%d", name, len(content))
        return "250 Message accepted for delivery"


def start_smtp_catcher(host: str, port: int, mailbox_dir: str | Path, *, smtputf8: bool = True) -> Controller:
    """Start the catcher in a background thread; call ``.stop()`` on the result to shut it down."""
    controller = Controller(
        MailboxHandler(Path(mailbox_dir)), hostname=host, port=port, enable_SMTPUTF8=smtputf8
    )
    controller.start()
    return controller


def serve_smtp_catcher(
    host: str = "127.0.0.1",
    port: int = 1025,
    mailbox_dir: str | Path = ".local/mail",
    *,
    stop: threading.Event | None = None,
) -> None:
    """Run the catcher in the foreground until ``stop`` is set or the process is interrupted."""
    controller = start_smtp_catcher(host, port, mailbox_dir)
    log.info("smtp_catcher.listening host=%s port=%d mailbox=%s", host, port, mailbox_dir)
    stop = stop or threading.Event()
    try:
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        controller.stop()
