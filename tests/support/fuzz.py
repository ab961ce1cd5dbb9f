"""Schemathesis tests built when they run, not when pytest collects them.

``@schema.parametrize()`` builds each operation's Hypothesis test at collection, and building one
computes its whole coverage phase (41,282 cases over the API, 26,237 of them campaigns.update's): about
30 s of CPU. Under pytest-xdist every worker collects every module, so each of the four paid it though
only the one worker that runs a fuzz module's group uses its cases. Here collection only lists the
operations (milliseconds); ``run_operation`` builds the same test, with the same configuration and the
same per-operation seed, on the worker that runs it. The builder is schemathesis' own (the one its
pytest plugin calls), so the cases and checks are exactly the plugin's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemathesis.checks import load_all_checks
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.pytest._test_builder import build_operation_test
from schemathesis.python._constants.orchestrator import make_constants_value_source
from schemathesis.schemas import BaseSchema

__all__ = ["operation_labels", "run_operation"]


def operation_labels(schema: BaseSchema) -> list[str]:
    """Every operation's label (``POST /trpc/campaigns.update``), in the schema's order: the test ids
    ``@schema.parametrize()`` gives."""
    return [result.ok().label for result in schema.get_all_operations()]


def run_operation(schema: BaseSchema, label: str, test: Callable[..., None], **fixtures: Any) -> None:
    """Build the operation's Hypothesis test around ``test(case, **fixtures)`` and run every phase."""
    load_all_checks()
    operation = schema.find_operation_by_label(label)
    assert operation is not None, f"no operation {label}"
    feedback = FeedbackSources(constants_value_source=make_constants_value_source(schema))
    built = build_operation_test(
        config=schema.config, operation=operation, test_func=test, given_kwargs={}, feedback=feedback
    )
    built(**fixtures)
