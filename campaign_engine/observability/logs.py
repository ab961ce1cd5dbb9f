"""JSON-line logs for every process, with bound ids and no secrets in them.

Every process (API, worker, sweeper, inbox, SMTP catcher, Lambda handlers) calls ``configure_logging``
once with its ``Settings``. One stderr handler on the root logger renders every record through
structlog's ``ProcessorFormatter``: our modules keep plain ``logging.getLogger(__name__)`` loggers and
``extra={...}`` fields, uvicorn's and the libraries' records come out the same way, and
``structlog.get_logger()`` works too. Each line carries what ``structlog.contextvars`` holds where it was
logged: ``requestId`` (API requests, Lambda invocations), ``campaignId``/``dispatchId`` (page jobs,
email pages); per-delivery lines pass ``deliveryId`` with them as fields.

``Redactor`` is the last step before rendering, so it sees every line of every logger: values of keys
that name a secret are dropped, and any string value is scrubbed of email addresses, bearer/basic
credentials, signed tokens (JWTs and unsubscribe tokens both start with base64 ``{"``), webhook
secrets and signatures, secret-looking query parameters, and the literal value of every secret in
``Settings``; a URL or path (keys ``path``, ``url``, ...) loses its whole query string. So uvicorn's
access line keeps method, path and status, never the query (tRPC inputs, unsubscribe tokens), and
never the client address.

``LOG_LEVEL`` applies to our modules and uvicorn's; every other library logs WARNING and up, whatever
it says: httpx logs full URLs (a receiver's secret path), the neo4j driver logs Bolt parameters,
aiosmtpd logs SMTP envelopes, botocore logs request bodies.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TextIO
from urllib.parse import quote, quote_plus

import structlog
from pydantic import SecretStr
from structlog.types import EventDict, Processor, WrappedLogger

__all__ = ["LogFormat", "Redactor", "build_handler", "configure_logging"]

LogFormat = Literal["json", "console"]

_OWN_LOGGERS = ("campaign_engine", "uvicorn")
REDACTED = "[redacted]"

# A key is secret if its name, lowercased without separators, contains one of these.
_SECRET_KEY_PARTS = (
    "authorization",
    "token",
    "password",
    "passwd",
    "secret",
    "apikey",
    "signature",
    "cookie",
    "credential",
    "privatekey",
    "webhook",  # a receiver's URL may carry its secret path
)
# Fields our own processors write (never from a caller's data): left as they are.
_STAMPED = frozenset({"timestamp", "level", "logger"})
# A URL or request path under one of these keys never keeps its query string.
_URL_KEYS = frozenset({"path", "url", "uri", "link", "target", "location", "referer"})
_SCRUB = re.compile(
    "|".join(
        [
            # email addresses, also URL-encoded (``%40``); \w admits non-ASCII local parts
            r"(?P<email>[\w.!#$%&'*+/=?^`{|}~-]+(?:@|%40)[\w-]+(?:\.[\w-]+)+)",
            r"(?P<auth>(?i:\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]+)",
            # JWTs and itsdangerous tokens (unsubscribe links): base64url of '{"' then a signature
            r"(?P<signed>\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_.-]+)",
            r"(?P<whsec>\bwhsec_[A-Za-z0-9+/=]+)",  # Standard Webhooks secret
            r"(?P<apikey>\bcek_[A-Za-z0-9_-]+)",  # an API key: cek_<id>_<secret>
            r"(?P<sig>\bv1,[A-Za-z0-9+/=]{20,})",  # Standard Webhooks signature
            r"(?P<param>(?i:[?&;](?:token|password|secret|key|api_?key|signature|sig|auth)=))[^&#\s\"']*",
        ]
    )
)


class Redactor:
    """The redaction step of the pipeline: ``secrets`` are literal values masked wherever they appear."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        variants = {v for s in secrets if len(s) >= 6 for v in (s, quote(s, safe=""), quote_plus(s))}
        # Longest first, so a secret that contains another is masked whole.
        self._literals = tuple(sorted(variants, key=len, reverse=True))

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        return {
            key: value if key in _STAMPED else self._value(key, value) for key, value in event_dict.items()
        }

    def text(self, value: str) -> str:
        # Substring tests first: most values (ids, event names, times) hold none of the triggers, and
        # ``in`` costs far less than a regex scan on every line of a busy process.
        for literal in self._literals:
            if literal in value:
                value = value.replace(literal, REDACTED)
        if _may_hold_secret(value):
            value = _SCRUB.sub(_replacement, value)
        return value

    def _value(self, key: object, value: Any, depth: int = 0) -> Any:
        if isinstance(key, str) and _secret_key(key) and value is not None:
            return REDACTED
        if isinstance(value, str):
            if isinstance(key, str) and key.lower() in _URL_KEYS and "?" in value:
                value = value.partition("?")[0] + "?" + REDACTED  # tRPC inputs, unsubscribe tokens
            return self.text(value)
        if isinstance(value, bool | int | float) or value is None:
            return value
        if depth > 4:  # deeper than any line of ours, and too deep to check key by key
            return "[too deep]"
        if isinstance(value, Mapping):
            return {k: self._value(k, v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self._value(None, v, depth + 1) for v in value]
        return self.text(str(value))  # rendered as text anyway: scrub what it would show


def _may_hold_secret(value: str) -> bool:
    """Every pattern of ``_SCRUB`` needs one of these substrings: most values need no regex scan."""
    return (
        "@" in value
        or "=" in value
        or "%40" in value
        or "eyJ" in value
        or "whsec_" in value
        or "cek_" in value
        or "v1," in value
        or "earer" in value
        or "EARER" in value
        or "asic" in value
        or "ASIC" in value
    )


@functools.lru_cache(maxsize=4096)  # a process logs the same few keys over and over
def _secret_key(key: str) -> bool:
    normal = key.lower().replace("_", "").replace("-", "")
    return any(part in normal for part in _SECRET_KEY_PARTS)


def _replacement(match: re.Match[str]) -> str:
    if match.group("param") is not None:
        return match.group("param") + REDACTED
    return "[redacted-email]" if match.group("email") is not None else REDACTED


def _uvicorn_fields(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    """uvicorn's access record as fields: method, path (its query is dropped by ``Redactor``), status;
    and no ``color_message`` on uvicorn's other lines. A record's arguments (``pass_foreign_args``) are
    read here and never rendered as such."""
    args = event_dict.pop("positional_args", None)
    event_dict.pop("color_message", None)  # uvicorn's copy of the message with terminal colours
    record = event_dict.get("_record")
    if record is None or record.name != "uvicorn.access":
        return event_dict
    if isinstance(args, tuple) and len(args) == 5:
        _client, method, path, http_version, status = args
        event_dict.update(
            event="http.request", method=method, path=path, status=status, httpVersion=http_version
        )
    else:  # an unknown shape: keep nothing that might hold a query string
        event_dict["event"] = "http.request"
    return event_dict


def _secrets_of(settings: Any) -> list[str]:
    """Every ``SecretStr`` value of a settings object (pydantic model)."""
    fields = getattr(type(settings), "model_fields", {})
    values = (getattr(settings, name, None) for name in fields)
    return [v.get_secret_value() for v in values if isinstance(v, SecretStr) and v.get_secret_value()]


def _shared() -> list[Processor]:
    """What every line gets, whether a stdlib record or a structlog event."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def build_handler(
    *, fmt: LogFormat = "json", secrets: Iterable[str] = (), stream: TextIO | None = None
) -> logging.Handler:
    """A handler that renders any record (stdlib or structlog) as one redacted line."""
    renderer: Processor = (
        structlog.processors.JSONRenderer(default=str)
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*_shared(), structlog.stdlib.ExtraAdder(), _uvicorn_fields],
        pass_foreign_args=True,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            Redactor(secrets),  # last before rendering: nothing reaches the stream unredacted
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter)
    return handler


def configure_logging(settings: Any, *, stream: TextIO | None = None) -> None:
    """Route every logger of this process to one redacted stderr line per record.

    ``settings`` is the process's ``Settings`` (``log_level``, ``log_format`` and its secrets); typed
    loosely so this base module needs nothing of ours. Safe to call again: the root handler is replaced.
    """
    level = logging.getLevelName(str(getattr(settings, "log_level", "INFO")).upper())
    fmt: LogFormat = "console" if getattr(settings, "log_format", "json") == "console" else "json"
    handler = build_handler(fmt=fmt, secrets=_secrets_of(settings), stream=stream)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for name in _OWN_LOGGERS:
        logging.getLogger(name).setLevel(level)
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared(),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
