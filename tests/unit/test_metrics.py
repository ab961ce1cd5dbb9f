"""The metric definitions, the EMF lines Lambda prints, the bearer check and multiprocess summing.

EMF rules checked (CloudWatch "Embedded metric format specification"): the root has ``_aws`` with an
integer millisecond ``Timestamp`` and a ``CloudWatchMetrics`` array of directives; each directive has a
``Namespace`` (1-255 characters), ``Dimensions`` (an array of dimension sets, each at most 30 names,
each name a top-level string member) and ``Metrics`` (at most 100, each a ``Name`` of 1-1024 characters
that is a top-level numeric member, and a ``Unit`` among CloudWatch's units).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from campaign_engine.observability import metrics
from campaign_engine.observability.metrics import METRICS, EmfRecorder
from campaign_engine.observability.metrics_serving import (
    ScrapeGauges,
    authorized,
    record_readings,
    serving_registry,
)

CLOUDWATCH_UNITS = {
    "Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
    "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second",
    "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second",
    "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None",
}  # fmt: skip
NOW = 1_767_225_600.25  # 2026-01-01T00:00:00.25Z


def assert_valid_emf(line: str) -> dict[str, Any]:
    document = json.loads(line)
    root = document["_aws"]
    assert isinstance(root["Timestamp"], int) and root["Timestamp"] == int(NOW * 1000)
    directives = root["CloudWatchMetrics"]
    assert isinstance(directives, list) and directives
    for directive in directives:
        assert 1 <= len(directive["Namespace"]) <= 255
        assert isinstance(directive["Dimensions"], list)
        for dimension_set in directive["Dimensions"]:
            assert isinstance(dimension_set, list) and len(dimension_set) <= 30
            for name in dimension_set:
                assert isinstance(document[name], str) and document[name], name
        assert 1 <= len(directive["Metrics"]) <= 100
        for metric in directive["Metrics"]:
            assert 1 <= len(metric["Name"]) <= 1024
            assert metric["Unit"] in CLOUDWATCH_UNITS
            assert isinstance(document[metric["Name"]], int | float)
            assert not isinstance(document[metric["Name"]], bool)
    return dict(document)


@pytest.fixture
def emf() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    previous = metrics.record_to(EmfRecorder(stream, wall_clock=lambda: NOW))
    try:
        yield stream
    finally:
        metrics.record_to(previous)


class _Stats:
    visible, in_flight, delayed, oldest_age_seconds = 3, 1, 2, 42.5


def test_every_recording_call_prints_valid_emf_lines(emf: io.StringIO) -> None:
    metrics.trpc_request("campaigns.dispatch", "OK", 0.012)
    metrics.deliveries("notify", {"acknowledged": 7, "rejected": 1, "blocked": 0})
    metrics.deliveries("email", {"accepted": 5, "throttled": 2})
    metrics.webhook_post("answered", 0.05)
    metrics.email_provider_call("smtp", ["accepted", "rejected"], 1.25)
    metrics.page_walked("email")
    metrics.graph_statement_timeout("lock_wait")
    record_readings(ScrapeGauges(queues={"delivery": _Stats}, dispatches=lambda: {("email", "sending"): 2}))

    documents = [assert_valid_emf(line) for line in emf.getvalue().splitlines()]
    by_name = {
        next(iter(d["_aws"]["CloudWatchMetrics"][0]["Metrics"]))["Name"]: d for d in documents
    }  # the last line of each name
    assert [d["deliveries"] for d in documents if "deliveries" in d] == [7, 1, 5, 2]  # zeros print nothing
    assert (
        by_name["trpc_requests"]["procedure"] == "campaigns.dispatch"
        and by_name["trpc_requests"]["code"] == "OK"
    )
    assert (
        by_name["trpc_request_duration_seconds"]["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"]
        == "Seconds"
    )
    assert by_name["email_provider_call_duration_seconds"]["outcome"] == "rejected"  # the batch's worst
    assert by_name["graph_statement_timeouts"]["phase"] == "lock_wait"
    assert by_name["queue_oldest_message_age_seconds"]["queue_oldest_message_age_seconds"] == 42.5
    assert by_name["dispatches"] | {"_aws": None} == {
        "_aws": None, "channel": "email", "status": "sending", "dispatches": 2.0
    }  # fmt: skip
    assert {d["_aws"]["CloudWatchMetrics"][0]["Namespace"] for d in documents} == {"CampaignEngine"}


def test_names_carry_their_unit_and_labels_stay_bounded() -> None:
    for metric in METRICS:
        assert metric.name.startswith("campaign_engine_")
        assert not metric.name.endswith("_total")  # the library adds it to counters
        assert metric.name.endswith("_seconds") == (metric.unit == "Seconds"), metric.name
        # Ids, addresses and URLs are unbounded: none of them may ever be a label.
        assert not {"campaign_id", "dispatch_id", "profile_id", "url", "address", "path"} & set(metric.labels)


def test_the_bearer_check_is_open_without_a_token_and_exact_with_one() -> None:
    assert authorized(None, None) and authorized("Bearer anything", "")
    assert authorized("Bearer s3cret-token", "s3cret-token")
    assert not authorized(None, "s3cret-token")
    assert not authorized("Bearer s3cret-toke", "s3cret-token")
    assert not authorized("bearer s3cret-token x", "s3cret-token")


def test_a_gauge_reader_that_fails_leaves_only_its_own_gauges_out() -> None:
    def broken() -> Any:
        raise OSError("queue file gone")

    gauges = ScrapeGauges(queues={"dispatch": broken, "delivery": _Stats}, dispatches=dict)
    names = {(metric.name, labels.get("queue")) for metric, labels, _ in gauges.readings()}
    assert names == {
        ("campaign_engine_queue_messages", "delivery"),
        ("campaign_engine_queue_oldest_message_age_seconds", "delivery"),
    }


_CHILD = """
import sys
from campaign_engine.observability import metrics
metrics.deliveries("notify", {"acknowledged": int(sys.argv[1])})
metrics.trpc_request("campaigns.dispatch", "OK", 0.01)
"""


def test_multiprocess_mode_sums_every_process_writing_the_directory(tmp_path: Path) -> None:
    directory = tmp_path / "prometheus"
    directory.mkdir()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(directory), "PATH": "/usr/bin:/bin"}
    for count in ("3", "4"):  # two processes, as uvicorn --workers would run them
        subprocess.run([sys.executable, "-c", _CHILD, count], env=env, check=True, timeout=60)

    registry = serving_registry(multiprocess_dir=str(directory))
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }
    acknowledged = (("channel", "notify"), ("outcome", "acknowledged"))
    assert samples[("campaign_engine_deliveries_total", acknowledged)] == 7
    assert (
        samples[
            ("campaign_engine_trpc_requests_total", (("code", "OK"), ("procedure", "campaigns.dispatch")))
        ]
        == 2
    )
