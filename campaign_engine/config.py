"""Settings from the environment: one typed object, built once by each edge (API, worker, CLI, Lambda).

Every variable the product reads is a field here, named as its environment variable. Each edge calls
the ``require_*`` check for what it needs, so a missing or placeholder secret fails at start with a
message that names the variable, never at the first request. One module past 350 lines on purpose:
every setting in one typed place is the point of it.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from campaign_engine.domain.frequency_cap import FrequencyCaps  # a domain leaf: the cap model
from campaign_engine.domain.webhook_keys import SecretBox  # a domain leaf: sealing receivers' secrets
from campaign_engine.domain.webhook_signature import secret_bytes  # a domain leaf: the one format rule

__all__ = ["ConfigError", "Settings"]

_PLACEHOLDERS = {"", "changeme", "change-me", "secret", "placeholder", "xxx"}


class ConfigError(ValueError):
    """A setting is missing or unusable; the message names the environment variable."""


def _check_secret(name: str, value: SecretStr | None, *, min_bytes: int) -> None:
    raw = value.get_secret_value() if value is not None else ""
    if raw.strip().lower() in _PLACEHOLDERS:
        raise ConfigError(f"{name} must be set to a real secret")
    if len(raw.encode()) < min_bytes:
        raise ConfigError(f"{name} must be at least {min_bytes} bytes long")


_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa")


def _is_public_host(host_port: str) -> bool:
    """False for names nobody else can reach: localhost, single labels, local suffixes, non-global IPs."""
    host = host_port.rpartition(":")[0] if ":" in host_port else host_port
    host = host.lower().rstrip(".")
    try:
        return ipaddress.ip_address(host).is_global
    except ValueError:
        pass
    labels = host.split(".")
    # One label, a numeric last label ("127.1" is an address to resolvers) or a local-only suffix.
    return len(labels) > 1 and not labels[-1].isdigit() and not host.endswith(_LOCAL_SUFFIXES)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    # --- logs (observability/logs.py) -----------------------------------------------------------
    # Level of our modules and uvicorn's (libraries stay at WARNING); JSON lines unless `console`,
    # which renders the same fields for a human at a terminal.
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "console"] = "json"

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _log_word(cls, value: object) -> object:
        """``LOG_LEVEL=info`` and ``LOG_FORMAT=JSON`` mean what they say."""
        if not isinstance(value, str):
            return value
        word = value.strip()
        return word.upper() if word.lower() in ("debug", "info", "warning", "error") else word.lower()

    # --- graph ---------------------------------------------------------------------------------
    neo4j_uri: str = "bolt://127.0.0.1:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = SecretStr("")
    neo4j_database: str = "neo4j"
    # How long a worker's graph call waits for an unreachable Neo4j (a restart) before it fails and its
    # job is redelivered; the API never waits more than about a second (a 503 at once). graph/graph.py
    neo4j_unavailable_wait_seconds: float = Field(default=300, ge=0, le=3600)
    # Each transaction's deadline, after which Neo4j ends it (a 503 on the API; a worker's job is
    # redelivered): the API's, and the worker edges' own (pages, sweeps, CLI). graph/graph.py
    neo4j_tx_timeout_seconds: float = Field(default=10, gt=0, le=3600)
    neo4j_worker_tx_timeout_seconds: float = Field(default=60, gt=0, le=3600)

    # --- API and auth --------------------------------------------------------------------------
    auth_jwt_secret: SecretStr | None = None
    auth_jwks_url: str | None = None
    auth_jwt_audience: str | None = None
    auth_jwt_issuer: str | None = None  # required `iss`, if set
    # Clock skew tolerated on `exp`, `nbf` and `iat` between the identity provider and us.
    auth_jwt_leeway_seconds: int = Field(default=30, ge=0, le=300)
    # The JWKS is fetched at most once per this many seconds, whatever tokens name unknown `kid`s.
    auth_jwks_min_refresh_seconds: int = Field(default=300, ge=1, le=86_400)
    # The console's OpenID provider (code + PKCE, public client); its tokens verify via AUTH_JWKS_URL.
    auth_oidc_issuer: str | None = None
    auth_oidc_client_id: str | None = None
    campaign_admin_profile_ids: str = ""
    campaign_default_tenant_id: str = "default"
    campaign_user_rate_limit_per_minute: int = Field(default=60, ge=1)

    # --- audience and policy -------------------------------------------------------------------
    domain_name: str = "localhost"
    # `make dev` only: email may then link to a loopback DOMAIN_NAME; anywhere else it must be public.
    campaign_local_development: bool = False
    campaign_adult_age: int = Field(default=18, ge=1, le=120)

    # --- dispatch ------------------------------------------------------------------------------
    campaign_dispatch_page_size: int = Field(default=1000, ge=1, le=10_000)
    campaign_dispatch_delay_seconds: int = Field(default=60, ge=0)
    campaign_deadline_min_delay_seconds: int = Field(default=0, ge=0)  # deliverBy's shortest wave gap
    campaign_email_page_size: int = Field(default=500, ge=1, le=1000)
    campaign_preview_max_recipients: int = Field(default=10_000, ge=1)
    # The share of a campaign's recipients (translated or not) who may get the base content though they
    # read another language before a send needs acceptFallback (blockedReason missing_translation).
    campaign_untranslated_max_share: float = Field(default=0.05, ge=0.0, le=1.0)
    # The fewest test recipients a test wave may give any variant (fewer cannot tell its arms apart).
    campaign_experiment_min_per_variant: int = Field(default=50, ge=1, le=1_000_000)
    # Sweeper page budget: a `sending` dispatch untouched for (wave delay <= 900 s) + this is re-armed.
    campaign_dispatch_stuck_seconds: int = Field(default=300, ge=1)
    # Failed attempts in a row at one page (raised, or re-armed without progress) before it is `failed`.
    campaign_dispatch_max_page_failures: int = Field(default=5, ge=1, le=1000)
    # The health guard (domain/dispatch_health.py): past this many accepted emails (answered, for rejections)
    # a send whose own rate crosses its limit pauses before its next page; tenants may override limits.
    campaign_guard_min_sample: int = Field(default=100, ge=1, le=10_000_000)
    campaign_guard_max_hard_bounce_rate: float = Field(default=0.02, ge=0, le=1)
    campaign_guard_max_complaint_rate: float = Field(default=0.001, ge=0, le=1)
    campaign_guard_max_rejection_rate: float = Field(default=0.05, ge=0, le=1)

    # --- queue ---------------------------------------------------------------------------------
    campaign_queue_backend: Literal["local", "sqs"] = "local"
    campaign_local_queue_path: str = ".local/queue.sqlite3"
    campaign_queue_max_receives: int = Field(default=5, ge=1)
    campaign_dispatch_queue_url: str | None = None
    campaign_delivery_queue_url: str | None = None
    # Event-webhook relay jobs: their own SQS queue and Lambda; unset, the delivery queue's.
    campaign_webhook_queue_url: str | None = None
    campaign_lane_queue_urls: dict[str, dict[str, str]] = {}  # SQS lanes' own queues (docs/lanes.md)
    aws_endpoint_url_sqs: str | None = None
    aws_region: str = "us-east-1"  # SQS region (Lambda sets AWS_REGION itself)
    # Local queue visibility timeout: longer than one delivery batch (POST timeout + graph write).
    campaign_queue_visibility_seconds: int = Field(default=60, ge=1, le=43_200)
    campaign_worker_threads: int = Field(default=4, ge=1, le=64)  # delivery-polling threads per worker

    # --- notify --------------------------------------------------------------------------------
    notifications_webhook_url: str | None = None
    notifications_webhook_secret: SecretStr | None = None
    # Seals each profile's own receiver secrets in the graph (domain/webhook_keys.py): one Fernet key,
    # or several comma-separated while it rotates (the first seals, any opens). Without it no profile
    # can be given a webhook of its own.
    campaign_secrets_key: SecretStr | None = None
    notifications_sender: str = "campaign-engine"
    notifications_format: Literal["standard", "learncard"] = "standard"  # delivery/notify/lcn.py
    campaign_did: str | None = None  # the engine's own DID; unset, did:web:<DOMAIN_NAME>
    campaign_did_key: SecretStr | None = None  # base64url Ed25519 seeds: the signing key[,the previous]
    # The reference inbox's trusted senders of LearnCard's format (space- or comma-separated DIDs, as
    # LearnCard's AUTHORIZED_DIDS); unset, the engine's own DID (inbox/learncard.py).
    inbox_authorized_dids: str = ""
    campaign_allow_private_webhooks: bool = False
    # Receiver ports beyond 443 and 80 that webhook POSTs may reach (comma-separated or a JSON list);
    # local development reaches any port (egress/policy.py).
    campaign_egress_ports: Annotated[frozenset[int], NoDecode] = frozenset()
    campaign_webhook_timeout_seconds: float = Field(default=5.0, gt=0)
    # POSTs in flight at once per worker process, shared by all its delivery threads.
    campaign_webhook_concurrency: int = Field(default=64, ge=1)
    # Back-off before an uncertain delivery is retried: base * 2^(receives-1), capped at 900 s.
    campaign_delivery_retry_seconds: int = Field(default=30, ge=0, le=900)

    # --- email ---------------------------------------------------------------------------------
    campaign_email_provider: Literal["postmark", "smtp", "none"] = "none"
    postmark_api_key: SecretStr | None = None
    postmark_broadcast_stream: str = "broadcast"
    postmark_api_url: str = "https://api.postmarkapp.com"
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 1025
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    # Sessions open at once to the relay per worker process (idle ones included); each
    # carries at most this many messages and is closed after this long unused.
    smtp_max_connections: int = Field(default=8, ge=1, le=256)
    smtp_max_messages_per_connection: int = Field(default=1000, ge=1, le=1_000_000)
    smtp_idle_seconds: float = Field(default=10.0, gt=0, le=3600)
    email_from: str = "announcements@localhost"
    campaign_unsubscribe_secret: SecretStr | None = None
    # JSON maps from the environment, typed here once: tenant -> app origin (email CTAs), and
    # tenant -> branding {"name", "logoUrl"?, "primaryColor"?, "textColor"?}.
    campaign_app_origins: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)
    campaign_tenants: Annotated[dict[str, dict[str, str]], NoDecode] = Field(default_factory=dict)
    # Frequency cap across campaigns: tenant ("*" = default) -> channel (notify, email) ->
    # {"max": n >= 1, "windowSeconds": s}, e.g. {"*": {"email": {"max": 3, "windowSeconds": 604800}}}.
    # Validated here so a typo stops the process at start, never at send time; unset = no cap.
    campaign_frequency_caps: Annotated[FrequencyCaps, NoDecode] = Field(default_factory=dict)
    # Wait before a throttled email page is retried when the provider gave no Retry-After.
    campaign_email_throttle_backoff_seconds: int = Field(default=60, ge=0, le=86_400)
    # Consecutive back-pressure deferrals of an email page (throttled, or waiting out the provider's
    # cooldown) before its Dispatch becomes `failed` (resume with campaigns.resumeDispatch).
    campaign_email_max_deferrals: int = Field(default=30, ge=1, le=10_000)
    # A claim older than this without an outcome (worker killed between claim and record) is counted
    # `uncertain` on its Dispatch by the sweeper and listed by campaigns.listUncertainEmails.
    campaign_email_uncertain_after_seconds: int = Field(default=3600, ge=60, le=604_800)
    # With no wave delay, one email page job keeps walking the following pages for up to this long,
    # claiming page n+1 while page n is with the provider; 0 = one page per job.
    campaign_email_run_seconds: int = Field(default=10, ge=0, le=120)

    # --- provider feedback (bounces, complaints, suppression) -----------------------------------
    # How long a webhook record's identity is kept to recognise a provider's retry of it (providers
    # retry a failed delivery for hours); the sweeper deletes older ones, so they never pile up.
    campaign_feedback_dedup_days: int = Field(default=30, ge=1, le=3650)
    # How long event webhooks' delivered events and every attempt are kept (webhookEndpoints.deliveries
    # and .replay reach that far back); the sweeper deletes older ones. An undelivered event is kept.
    campaign_event_retention_days: int = Field(default=30, ge=1, le=3650)
    # HTTP basic auth of POST /webhooks/postmark; unset = the endpoint answers 404.
    postmark_webhook_username: str | None = None
    postmark_webhook_password: SecretStr | None = None
    # Comma-separated SNS topic ARNs whose SES notifications POST /webhooks/ses accepts; unset = 404.
    # Anyone can sign for their own topic, so only these are believed; the region in each ARN is the
    # only SNS host its signing certificate and subscription confirmation are fetched from.
    ses_feedback_topic_arns: str = ""
    # An SNS message whose signed Timestamp is older than this (or over 5 minutes ahead) is refused
    # before anything else, so a captured one cannot be replayed once its dedup record has expired.
    campaign_sns_max_age_seconds: int = Field(default=3600, ge=60, le=86_400)
    # Soft bounces suppress an address once this many arrive within the window.
    campaign_soft_bounce_limit: int = Field(default=3, ge=1, le=100)
    campaign_soft_bounce_window_hours: int = Field(default=168, ge=1, le=8760)

    # --- command-line clients of the API (`campaign-engine dispatch watch`) ----------------------
    # They call the public tRPC API like the console does, so they need where it is and an admin
    # bearer token (sent as a header only, never in a URL); `--api` / `--token` override these.
    campaign_api_url: str = "http://127.0.0.1:8000"
    campaign_api_token: SecretStr | None = None

    # --- metrics (docs/architecture.md "Metrics") -------------------------------------------------
    # /metrics on the API and the worker needs `Authorization: Bearer <this>`. Without it they refuse to
    # start, unless METRICS_PUBLIC=true (a scraper on a private network) or local development says open.
    metrics_bearer_token: SecretStr | None = None
    metrics_public: bool = False
    # The worker serves /metrics on this port when set (make dev: 9464); unset = no metrics server.
    metrics_port: int | None = Field(default=None, ge=1, le=65_535)
    # Where the worker's metrics server listens: loopback unless a scraper on another host needs it.
    metrics_host: str = "127.0.0.1"
    # prometheus_client's multiprocess mode (several processes behind one endpoint, e.g. uvicorn
    # --workers): the library reads this variable itself when it is imported, so it must be in the
    # process environment; here it tells /metrics to sum the processes' files. Empty it at each start.
    prometheus_multiproc_dir: str | None = None

    @field_validator("campaign_egress_ports", mode="before")
    @classmethod
    def _port_list(cls, value: object) -> object:
        """``CAMPAIGN_EGRESS_PORTS=8443,9443`` or ``[8443, 9443]``; each a TCP port."""
        if isinstance(value, str):
            text = value.strip()
            listed = [part for part in text.split(",") if part.strip()]
            try:
                value = json.loads(text) if text.startswith("[") else listed
            except json.JSONDecodeError as exc:
                raise ValueError(f"must be a list of ports: {exc.msg}") from exc
        if not isinstance(value, list | tuple | set | frozenset):
            raise ValueError("must be a list of ports")
        ports = frozenset(int(str(port).strip()) for port in value)
        if any(not 0 < port < 65_536 for port in ports):
            raise ValueError("every port must be between 1 and 65535")
        return ports

    @field_validator("campaign_app_origins", "campaign_tenants", "campaign_frequency_caps", mode="before")
    @classmethod
    def _json_object(cls, value: object) -> object:
        """The environment (and ``Settings(field="...")``) spells these maps as JSON text."""
        if isinstance(value, str):
            try:
                value = json.loads(value or "{}")
            except json.JSONDecodeError as exc:
                raise ValueError(f"must be a JSON object: {exc.msg}") from exc
        if not isinstance(value, dict):
            raise ValueError("must be a JSON object")
        return value

    @property
    def admin_profile_ids(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.campaign_admin_profile_ids.split(",") if p.strip())

    @property
    def dispatch_channels(self) -> frozenset[Literal["notify", "email"]]:
        """The delivery channels this deployment can send: email only where a provider is configured.
        A dispatch (now or scheduled) of a campaign with another channel is refused, never left to fail
        in the worker."""
        return frozenset(("notify", "email") if self.campaign_email_provider != "none" else ("notify",))

    def require_api(self) -> None:
        """The API verifies tokens: an HS256 secret or a JWKS URL (or both) must be configured.

        An identity provider signs tokens for every application it serves, so in JWKS mode a token is
        ours only if its audience and issuer say so: both are required. The key set decides who may
        sign, so it comes over https (plain http only in local development)."""
        if self.auth_jwks_url:
            if not (self.auth_jwt_audience or "").strip() or not (self.auth_jwt_issuer or "").strip():
                raise ConfigError(
                    "AUTH_JWT_AUDIENCE and AUTH_JWT_ISSUER must be set with AUTH_JWKS_URL: otherwise any"
                    " token the identity provider issues for any application would be accepted"
                )
            self._require_https("AUTH_JWKS_URL", self.auth_jwks_url)
            if self.auth_jwt_secret is not None:  # accepted beside the key set: as strong as alone
                _check_secret("AUTH_JWT_SECRET", self.auth_jwt_secret, min_bytes=32)
        else:
            _check_secret("AUTH_JWT_SECRET", self.auth_jwt_secret, min_bytes=32)
        if self.auth_oidc_issuer or self.auth_oidc_client_id:
            # The console would sign people in with tokens the API cannot verify.
            if not (self.auth_oidc_issuer and self.auth_oidc_client_id and self.auth_jwks_url):
                raise ConfigError("AUTH_OIDC_ISSUER, AUTH_OIDC_CLIENT_ID and AUTH_JWKS_URL go together")
            self._require_https("AUTH_OIDC_ISSUER", self.auth_oidc_issuer)

    def _require_https(self, name: str, value: str) -> None:
        url = urlsplit(value.strip())
        allowed = ("https", "http") if self.campaign_local_development else ("https",)
        if url.scheme not in allowed or not url.hostname:
            raise ConfigError(f"{name} must be an https URL (http only with CAMPAIGN_LOCAL_DEVELOPMENT=true)")

    def require_metrics(self) -> None:
        """Before serving /metrics: a bearer token, unless it is openly meant to be open (METRICS_PUBLIC
        or local development), since counters and queue depths are nobody else's business.

        Multiprocess mode is prometheus_client's, chosen from the environment when it is imported: a
        directory named only in an env file would make /metrics sum files nobody writes (all zeros), so
        the environment must name the same existing directory."""
        token = self.metrics_bearer_token
        if token is not None and token.get_secret_value():
            _check_secret("METRICS_BEARER_TOKEN", token, min_bytes=16)
        elif not (self.metrics_public or self.campaign_local_development):
            raise ConfigError(
                "METRICS_BEARER_TOKEN must be set: /metrics is closed outside local development"
                " (METRICS_PUBLIC=true serves it without a token)"
            )
        wanted = self.prometheus_multiproc_dir
        if not wanted:
            return
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR") != wanted:
            raise ConfigError(
                "PROMETHEUS_MULTIPROC_DIR must be set in the process environment (prometheus_client "
                "reads it when imported), not only in an env file"
            )
        if not os.path.isdir(wanted):
            raise ConfigError("PROMETHEUS_MULTIPROC_DIR must name an existing (empty at start) directory")

    def require_webhooks(self) -> None:
        """Signing needs a Standard Webhooks secret (``whsec_`` + base64 of 24+ bytes), checked at start."""
        secret = self.notifications_webhook_secret
        raw = secret.get_secret_value() if secret is not None else ""
        if raw.strip().lower() in _PLACEHOLDERS:
            raise ConfigError("NOTIFICATIONS_WEBHOOK_SECRET must be set to a real secret")
        try:
            secret_bytes(raw)
        except ValueError as exc:  # its message never quotes the secret
            raise ConfigError(f"NOTIFICATIONS_WEBHOOK_SECRET: {exc}") from None

    def secret_box(self) -> SecretBox | None:
        """The box that seals receivers' own secrets, or None when ``CAMPAIGN_SECRETS_KEY`` is unset."""
        if self.campaign_secrets_key is None or not self.campaign_secrets_key.get_secret_value().strip():
            return None
        try:
            return SecretBox(self.campaign_secrets_key.get_secret_value())
        except ValueError as exc:  # its message never quotes the key
            raise ConfigError(f"CAMPAIGN_SECRETS_KEY {exc}") from None

    def require_unsubscribe(self) -> None:
        _check_secret("CAMPAIGN_UNSUBSCRIBE_SECRET", self.campaign_unsubscribe_secret, min_bytes=32)
        if not self.domain_name.strip():
            raise ConfigError("DOMAIN_NAME must name the public host of this service")

    def require_email(self) -> None:
        """With an email provider configured, everything a send needs must be usable before the first page:
        the public host and unsubscribe secret (every message carries a link), the provider's settings
        and the app origins (every message carries a CTA). Origin shapes are checked by the worker wiring.
        """
        if self.campaign_email_provider == "none":
            return
        self.require_unsubscribe()
        if not re.fullmatch(
            r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::\d{1,5})?", self.domain_name.strip()
        ):
            raise ConfigError("DOMAIN_NAME must be the bare public host of this service (no scheme or path)")
        if not self.campaign_local_development and not _is_public_host(self.domain_name.strip()):
            raise ConfigError(
                "DOMAIN_NAME must be the public host of this service: every email links to it to"
                " unsubscribe (loopback or local names only with CAMPAIGN_LOCAL_DEVELOPMENT=true)"
            )
        if "@" not in self.email_from:
            raise ConfigError("EMAIL_FROM must be an email address")
        if self.campaign_email_provider == "postmark":
            _check_secret("POSTMARK_API_KEY", self.postmark_api_key, min_bytes=8)
            if not self.postmark_broadcast_stream.strip():
                raise ConfigError("POSTMARK_BROADCAST_STREAM must name a Broadcasts message stream")
        elif not self.smtp_host.strip() or not 0 < self.smtp_port < 65536:
            raise ConfigError("SMTP_HOST and SMTP_PORT must name the SMTP relay")
        if not self.campaign_app_origins.get(self.campaign_default_tenant_id):
            raise ConfigError(
                "CAMPAIGN_APP_ORIGINS must map the default tenant"
                f' ({self.campaign_default_tenant_id!r}) to its app origin, e.g. {{"default": "https://app.example"}}'
            )
