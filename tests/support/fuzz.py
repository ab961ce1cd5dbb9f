"""Schemathesis tests built when they run, not when pytest collects them.

``@schema.parametrize()`` builds each operation's Hypothesis test at collection, and building one
computes its whole coverage phase (41,282 cases over the API, 26,237 of them campaigns.update's): about
30 s of CPU. Under pytest-xdist every worker collects every module, so each of the four paid it though
only the one worker that runs a fuzz module's group uses its cases. Here collection only lists the
operations (milliseconds); ``run_operation`` builds the same test, with the same configuration and the
same per-operation seed, on the worker that runs it. The builder is schemathesis' own (the one its
pytest plugin calls), so the cases and checks are exactly the plugin's.

schemathesis also merges an operation's check settings afresh for every response it validates
(``ProjectConfig.checks_config_for``): for an operation a configuration entry names, a fifth of the
CPU of validating a case. The merge depends only on the configuration, the operation and the phase,
none of which a run changes, so ``memoize_checks_config`` keeps each merge for the process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.cookiejar import DefaultCookiePolicy
from typing import Any

import requests
from schemathesis.checks import load_all_checks
from schemathesis.config import ChecksConfig, ProjectConfig
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.pytest._test_builder import build_operation_test
from schemathesis.python._constants.orchestrator import make_constants_value_source
from schemathesis.schemas import BaseSchema

__all__ = [
    "keep_alive_session",
    "memoize_checks_config",
    "merged_afresh",
    "operation_labels",
    "run_operation",
]

merged_afresh = ProjectConfig.checks_config_for  # schemathesis' own merge, kept for the check
# (configuration id, operation label, phase) -> (the configuration, its merge): the configuration is kept
# so its id cannot be reused by another while the entry lives.
_MERGED: dict[tuple[int, str | None, str | None], tuple[ProjectConfig, ChecksConfig]] = {}


def _merged_once(self: ProjectConfig, *, operation: Any = None, phase: str | None = None) -> ChecksConfig:
    key = (id(self), None if operation is None else operation.label, phase)
    found = _MERGED.get(key)
    if found is None or found[0] is not self:
        found = _MERGED[key] = (self, merged_afresh(self, operation=operation, phase=phase))
    return found[1]


def memoize_checks_config() -> None:
    """Serve each (configuration, operation, phase)'s check settings from the first merge."""
    ProjectConfig.checks_config_for = _merged_once  # type: ignore[method-assign]


@contextmanager
def keep_alive_session() -> Iterator[requests.Session]:
    """One connection for a module's cases (schemathesis otherwise opens, and the server accepts, a new
    one per case); it keeps no cookies, so each case sends only what it was drawn with."""
    with requests.Session() as session:
        session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
        yield session


def operation_labels(schema: BaseSchema) -> list[str]:
    """Every operation's label (``POST /trpc/campaigns.update``), in the schema's order: the test ids
    ``@schema.parametrize()`` gives."""
    return [result.ok().label for result in schema.get_all_operations()]


def run_operation(schema: BaseSchema, label: str, test: Callable[..., None], **fixtures: Any) -> None:
    """Build the operation's Hypothesis test around ``test(case, **fixtures)`` and run every phase."""
    load_all_checks()
    memoize_checks_config()
    operation = schema.find_operation_by_label(label)
    assert operation is not None, f"no operation {label}"
    feedback = FeedbackSources(constants_value_source=make_constants_value_source(schema))
    built = build_operation_test(
        config=schema.config, operation=operation, test_func=test, given_kwargs={}, feedback=feedback
    )
    built(**fixtures)
