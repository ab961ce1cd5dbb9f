"""Safe egress, the blocked-destination matrix with a controllable resolver: every blocked range, IP
literals, mixed answers, resolution errors and the request-level rules, each through both faces
(``AsyncSafeTransport.post`` and the ``WebhookPoster`` the notification worker posts through).

Without the rule a blocked-destination test fails with a connect error or timeout instead of the
expected verdict. Its timeout (5 s) also bounds the resolution on the transport's own thread, so it
leaves a loaded 2-core machine time to schedule that thread."""

from __future__ import annotations

import httpx
import pytest

from campaign_engine.delivery.notify.sender import (
    Blocked,
    Unreachable,
)
from campaign_engine.egress.policy import DestinationRules, EgressBlocked, system_resolver
from tests.support.egress import (
    DictResolver,
    _client,
    _transport_client,
    _webhook_client,
    blocked,
    fails,
)

# --- the blocked-destination matrix -------------------------------------------------------------

BLOCKED_ADDRESSES = {
    "0.0.0.0/8": "0.0.0.0",
    "0.x": "0.1.2.3",
    "10/8": "10.1.2.3",
    "CGNAT 100.64/10": "100.64.0.1",
    "CGNAT top": "100.127.255.254",
    "loopback": "127.0.0.1",
    "loopback other": "127.8.9.10",
    "link-local metadata": "169.254.169.254",
    "172.16/12": "172.16.0.1",
    "172.31": "172.31.255.254",
    "192.0.0/24": "192.0.0.8",
    "TEST-NET-1": "192.0.2.1",
    "6to4 relay": "192.88.99.1",
    "192.168/16": "192.168.1.1",
    "benchmarking": "198.18.0.1",
    "TEST-NET-2": "198.51.100.7",
    "TEST-NET-3": "203.0.113.9",
    "multicast": "224.0.0.1",
    "multicast top": "239.255.255.250",
    "reserved": "240.0.0.1",
    "broadcast": "255.255.255.255",
    "v6 unspecified": "::",
    "v6 loopback": "::1",
    "v6 ipv4-mapped": "::ffff:8.8.8.8",
    "v6 ipv4-mapped loopback": "::ffff:127.0.0.1",
    "v6 ipv4-compatible": "::8.8.8.8",
    "v6 NAT64": "64:ff9b::808:808",
    "v6 local NAT64": "64:ff9b:1::1",
    "v6 discard": "100::1",
    "v6 ULA fc": "fc00::1",
    "v6 ULA fd": "fd12:3456::1",
    "v6 link-local": "fe80::1",
    "v6 site-local": "fec0::1",
    "v6 multicast": "ff02::1",
    "v6 Teredo": "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "v6 benchmarking": "2001:2::1",
    "v6 ORCHIDv2": "2001:20::1",
    "v6 documentation": "2001:db8::1",
    "v6 documentation 3fff": "3fff::1",
    "v6 6to4": "2002:c000:0201::1",
    "v6 outside 2000::/3": "4000::1",
}


@pytest.mark.parametrize("address", BLOCKED_ADDRESSES.values(), ids=BLOCKED_ADDRESSES.keys())
def test_every_blocked_range_is_refused(address: str, face: str) -> None:
    client, resolver = _client(face, {"hook.example": [address]})
    with client, blocked(face):
        client.post("http://hook.example:8080/inbox", json={})
    assert resolver.calls == [("hook.example", 8080)]


@pytest.mark.parametrize(
    "url",
    ["http://10.0.0.1:8080/", "http://127.0.0.1:8080/", "http://[::1]:8080/", "http://[fe80::1]:8080/"],
)
def test_ip_literal_urls_are_checked_without_resolving(url: str, face: str) -> None:
    client, resolver = _client(face, {})
    with client, blocked(face):
        client.post(url, json={})
    assert resolver.calls == []


@pytest.mark.parametrize(
    "answers",
    [["93.184.216.34", "10.0.0.1"], ["10.0.0.1", "93.184.216.34"], ["2606:4700::1", "fd00::1"]],
    ids=["public then private", "private then public", "v6 public then ULA"],
)
def test_one_private_answer_blocks_the_lot(answers: list[str], face: str) -> None:
    client, _ = _client(face, {"hook.example": answers})
    with client, blocked(face):
        client.post("http://hook.example/", json={})


@pytest.mark.parametrize(
    "answers",
    [{}, {"hook.example": []}, {"hook.example": ["not-an-ip"]}],
    ids=["nxdomain", "no answers", "garbage answer"],
)
def test_resolution_errors_fail_closed(answers: dict[str, list[str]], face: str) -> None:
    client, _ = _client(face, answers)
    with client, fails(face, raises=httpx.ConnectError, result=Unreachable) as caught:
        client.post("http://hook.example/", json={})
    assert not isinstance(caught.value, EgressBlocked | Blocked)  # retryable, not a policy verdict


@pytest.mark.parametrize(
    "url",
    [
        "http://user:secret@inbox.test/",
        "http://user@inbox.test/",
        "http://:secret@inbox.test/",
        "ftp://inbox.test/",
        "file:///etc/passwd",
    ],
)
def test_request_level_rules_apply_before_resolution(url: str, face: str) -> None:
    resolver = DictResolver({"inbox.test": ["127.0.0.1"]})
    with _transport_client(face, resolver=resolver, timeout=1) as client, blocked(face):
        client.post(url, json={})
    assert resolver.calls == []


def test_credentials_in_url_are_refused_through_the_client(face: str) -> None:
    client, resolver = _client(face, {"inbox.test": ["127.0.0.1"]}, allow_private=True)
    with client, blocked(face, match="credentials"):
        client.post("http://user:secret@inbox.test/", json={})
    assert resolver.calls == []


@pytest.mark.parametrize(
    "address",
    ["169.254.169.254", "fd00:ec2::254", "::ffff:127.0.0.1", "100.64.0.1", "224.0.0.1", "0.0.0.0"],
)
def test_allow_private_never_opens_metadata_or_special_ranges(address: str, face: str) -> None:
    # fd00:ec2::254 is AWS's IPv6 metadata address, inside the ULA range the flag admits.
    client, _ = _client(face, {"hook.example": [address]}, allow_private=True)
    with client, blocked(face):
        client.post("http://hook.example/", json={})


@pytest.mark.parametrize(
    ("url", "extra_ports", "reason"),
    [
        ("http://hook.example/", (), "only https"),
        ("https://hook.example:8443/", (), "port"),
        ("https://hook.example:22/", (8443,), "port"),
        ("https://hook.example:8443/", (8443,), "loopback"),  # past the rules, refused by the address
        ("https://hook.example/", (), "loopback"),
        ("https://hook.example:80/", (), "loopback"),
    ],
)
def test_outside_local_development_only_https_to_allowed_ports(
    url: str, extra_ports: tuple[int, ...], reason: str, face: str
) -> None:
    rules = DestinationRules.of(local_development=False, extra_ports=extra_ports)
    resolver = DictResolver({"hook.example": ["127.0.0.1"]})
    client = _webhook_client(face, allow_private=False, timeout=0.5, resolver=resolver, rules=rules)
    with client, blocked(face, match=reason):
        client.post(url, json={})


def test_egress_errors_do_not_leak_the_url(face: str) -> None:
    client, _ = _client(face, {"hook.example": ["10.0.0.1"]})
    with client, blocked(face) as caught:
        client.post("http://hook.example/t/SECRET-TOKEN", json={})
    for text in (str(caught.value), repr(caught.value)):  # what reaches the logs
        assert "SECRET" not in text
        assert "hook.example" not in text


def test_an_invalid_url_is_blocked_not_retried(face: str) -> None:
    client = _webhook_client(face, allow_private=True, timeout=0.5, resolver=DictResolver({}))
    with client, blocked(face):
        client.post("http://[::1/hook", json={})


def test_system_resolver_returns_ip_strings() -> None:
    assert "127.0.0.1" in system_resolver("127.0.0.1", 80)
