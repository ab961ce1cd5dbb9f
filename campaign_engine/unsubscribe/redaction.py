"""Keeping unsubscribe tokens out of logs.

Unsubscribe links carry their token in the query string (RFC 8058 needs a plain URL), and uvicorn's
access log records the full path with its query. A token is bearer authority, so every server that
serves the unsubscribe routes either turns access logs off or installs this filter on ``uvicorn.access``
after uvicorn has configured logging.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

__all__ = ["RedactTokens", "install_access_log_redaction", "redact_tokens"]

_TOKEN_PARAM = re.compile(r"(?i)([?&;]token=)[^&#\s\"']*")


def redact_tokens(text: str) -> str:
    return _TOKEN_PARAM.sub(r"\1[redacted]", text)


class RedactTokens(logging.Filter):
    """Rewrites ``token=...`` query values in a record's message and arguments; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_tokens(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact_tokens(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {k: redact_tokens(v) if isinstance(v, str) else v for k, v in record.args.items()}
        return True


def install_access_log_redaction(logger_name: str = "uvicorn.access") -> None:
    """Idempotent: one ``RedactTokens`` filter on the named logger."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, RedactTokens) for f in logger.filters):
        logger.addFilter(RedactTokens())
