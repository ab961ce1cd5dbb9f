"""What every command shares: its settings, loaded once with the process's logging."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from campaign_engine.config import Settings

if TYPE_CHECKING:
    from campaign_engine.graph.graph import Graph

__all__ = ["CommandFailed", "command_graph", "load_settings"]

# How long a one-shot command (import, migrate, sweep) waits for an unreachable Neo4j before it says so:
# a refused connection answers at once, a silent host within the driver's 5 s connect timeout, so the
# command speaks within 10 s of starting. The long-running processes wait as their settings say.
COMMAND_WAIT_SECONDS = 2.0


class CommandFailed(Exception):
    """A one-shot command cannot go on; its message is for the person at the terminal."""


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


def command_graph(settings: Settings) -> Graph:
    """The graph of a one-shot command, checked reachable first: a command never hangs silently on a
    Neo4j that is not there (the address it tried is named, never the credentials). Once it answered,
    later calls ride out a restart as every edge's do (``NEO4J_UNAVAILABLE_WAIT_SECONDS``)."""
    from campaign_engine.domain.errors import ServiceUnavailable
    from campaign_engine.graph.graph import open_graph

    graph = open_graph(settings, unavailable_wait=COMMAND_WAIT_SECONDS)
    try:
        graph.run("RETURN 1")
    except ServiceUnavailable as exc:
        graph.close()
        raise CommandFailed(
            f"cannot reach Neo4j at {settings.neo4j_uri} ({exc}); is it running? make dev writes its "
            "address to .local/dev.env: run with CAMPAIGN_ENV_FILE=.local/dev.env"
        ) from exc
    graph.unavailable_wait = settings.neo4j_unavailable_wait_seconds
    return graph
