"""What every command shares: its settings, loaded once with the process's logging."""

from __future__ import annotations

import os

from campaign_engine.config import Settings

__all__ = ["load_settings"]


def load_settings(*, logs: bool = True) -> Settings:
    """This command's settings; unless ``logs`` is off (a command that only prints an answer), the
    process's logging is configured from them (level, format, the secrets to mask), so every process
    logs the same JSON lines."""
    from campaign_engine.observability.logs import configure_logging

    env_file = os.environ.get("CAMPAIGN_ENV_FILE")
    settings = Settings(_env_file=env_file if env_file else None)
    if logs:
        configure_logging(settings)
    return settings
