"""Which feedback endpoints this deployment serves, from ``Settings``, checked once at start."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from campaign_engine.config import ConfigError, Settings
from campaign_engine.feedback.sns import parse_topic_arns

__all__ = ["FeedbackConfig"]

_PLACEHOLDERS = {"changeme", "change-me", "secret", "placeholder", "xxx", "password"}


@dataclass(frozen=True)
class FeedbackConfig:
    postmark_credentials: tuple[str, str] | None  # None: POST /webhooks/postmark answers 404
    ses_topic_arns: frozenset[str]  # empty: POST /webhooks/ses answers 404
    soft_bounce_limit: int
    soft_bounce_window: timedelta

    @classmethod
    def from_settings(cls, settings: Settings) -> FeedbackConfig:
        username = (settings.postmark_webhook_username or "").strip()
        password = (
            settings.postmark_webhook_password.get_secret_value()
            if settings.postmark_webhook_password
            else ""
        )
        credentials: tuple[str, str] | None = None
        if username or password:
            if not username or ":" in username:
                raise ConfigError(
                    "POSTMARK_WEBHOOK_USERNAME must be set (without ':') with POSTMARK_WEBHOOK_PASSWORD"
                )
            if password.strip().lower() in _PLACEHOLDERS or len(password.encode()) < 16:
                raise ConfigError("POSTMARK_WEBHOOK_PASSWORD must be a real secret of at least 16 bytes")
            credentials = (username, password)
        try:
            topics = parse_topic_arns(settings.ses_feedback_topic_arns)
        except ValueError as exc:
            raise ConfigError(f"SES_FEEDBACK_TOPIC_ARNS: {exc}") from None
        return cls(
            postmark_credentials=credentials,
            ses_topic_arns=topics,
            soft_bounce_limit=settings.campaign_soft_bounce_limit,
            soft_bounce_window=timedelta(hours=settings.campaign_soft_bounce_window_hours),
        )
