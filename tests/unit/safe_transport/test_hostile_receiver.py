"""Safe egress against a hostile receiver: heads that never end (a raw loopback server), names that
never resolve, and many hosts, counting open sockets through the transport's bookkeeping and
``/proc/self/fd``."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator

import httpx
import pytest

from campaign_engine.delivery.notify.poster import WebhookPoster
from campaign_engine.delivery.notify.sender import (
    Answered,
    Blocked,
    Outgoing,
    PostResult,
    Unreachable,
    Unreadable,
)
from campaign_engine.egress.policy import EgressBlocked
from campaign_engine.egress.transport import (
    AsyncSafeTransport,
    HeadersTooLarge,
    make_webhook_transport,
)
from tests.support.egress import (
    LOOPBACK,
    SECRET,
    DictResolver,
    _over,
    _Server,
    _url,
    _webhook_client,
    fails,
)

# --- a hostile receiver: endless heads, names that never resolve, thousands of hosts ---


class _RawInbox:
    """A loopback receiver speaking raw bytes: each request is answered with the parts of ``answer()``,
    as fast as the client takes them, until they run out, the client leaves, or ten seconds pass.
    ``client_left`` is set once a client has closed its connection."""

    def __init__(self, answer: Callable[[], Iterable[bytes]]) -> None:
        self._answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port: int = self._listener.getsockname()[1]
        self.client_left = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> _RawInbox:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        deadline = time.monotonic() + 10
        with connection:
            connection.settimeout(5)
            try:
                request = b""
                while b"\r\n\r\n" not in request:
                    received = connection.recv(65536)
                    if not received:
                        return
                    request += received
                for part in self._answer():
                    if self._stop.is_set() or time.monotonic() > deadline:
                        return
                    connection.sendall(part)
                while connection.recv(65536):  # kept alive until the client closes it
                    pass
            except TimeoutError:
                return
            except OSError:  # the client closed while we were still sending
                pass
            self.client_left.set()


def _endless(first: bytes, then: bytes) -> Callable[[], Iterator[bytes]]:
    def parts() -> Iterator[bytes]:
        yield first
        while True:
            yield then

    return parts


def _head(status: bytes, headers: list[bytes]) -> Callable[[], list[bytes]]:
    answer = b"HTTP/1.1 " + status + b"\r\n" + b"".join(h + b"\r\n" for h in headers)
    return lambda: [answer + b"Content-Type: application/json\r\nContent-Length: 4\r\n\r\ntrue"]


HOSTILE_HEADS = {
    "endless headers": _endless(b"HTTP/1.1 200 OK\r\n", b"X-Filler: " + b"a" * 40 + b"\r\n"),
    "one endless header value": _endless(b"HTTP/1.1 200 OK\r\nX-Endless: ", b"a" * 4096),
    "endless interim answers": _endless(b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
    "too many headers": _head(b"200 OK", [b"X-H%d: 1" % i for i in range(150)]),
    "an oversized head in one piece": _head(b"200 OK", [b"X-B%d: " % i + b"b" * 1500 for i in range(12)]),
}


@pytest.mark.parametrize("answer", HOSTILE_HEADS.values(), ids=HOSTILE_HEADS.keys())
def test_a_head_over_the_caps_is_unreadable_and_the_connection_closed(
    answer: Callable[[], Iterable[bytes]], face: str
) -> None:
    """Like common servers: 16 KiB of head, 100 headers. Without the caps an endless head holds the
    connection (and memory) until the timeout, and an oversized one is read as an answer."""
    resolver = DictResolver({"inbox.test": ["127.0.0.1"]})
    client = _webhook_client(face, allow_private=True, timeout=3, resolver=resolver)
    with _RawInbox(answer) as hostile, client:
        started = time.monotonic()
        with fails(face, raises=HeadersTooLarge, result=Unreadable) as caught:
            client.post(f"http://inbox.test:{hostile.port}/", json={})
        assert time.monotonic() - started < 1.5  # the cap ended it, not the timeout
        assert hostile.client_left.wait(2)  # closed at once, not kept alive
    if face == "sender":
        assert caught.value == Unreadable("HeadersTooLarge")  # uncertain: retried, never acknowledged


def test_a_head_within_the_caps_is_read(face: str) -> None:
    headers = [b"X-H%d: " % i + b"h" * 100 for i in range(95)]  # about 11 KiB in 97 headers
    resolver = DictResolver({"inbox.test": ["127.0.0.1"]})
    client = _webhook_client(face, allow_private=True, timeout=3, resolver=resolver)
    with _RawInbox(_head(b"200 OK", headers)) as receiver, client:
        assert client.post(f"http://inbox.test:{receiver.port}/", json={}).json() is True


class StuckResolver(DictResolver):
    """``DictResolver`` whose ``stuck`` names never answer (a DNS server dropping the queries) until
    ``release`` is set or ten seconds pass; then they fail like SERVFAIL."""

    def __init__(self, answers: dict[str, list[str]], *, stuck: set[str]) -> None:
        super().__init__(answers)
        self.stuck = stuck
        self.release = threading.Event()

    def __call__(self, host: str, port: int) -> list[str]:
        if host not in self.stuck:
            return super().__call__(host, port)
        self.calls.append((host, port))
        self.release.wait(10)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")


def test_a_name_that_never_resolves_is_unreachable_within_the_timeout(face: str) -> None:
    resolver = StuckResolver({}, stuck={"stuck.test"})
    try:
        with _webhook_client(face, allow_private=False, timeout=0.5, resolver=resolver) as client:
            started = time.monotonic()
            with fails(face, raises=httpx.ConnectError, result=Unreachable) as caught:
                client.post("http://stuck.test/", json={})
            assert time.monotonic() - started < 2
    finally:
        resolver.release.set()
    assert not isinstance(caught.value, EgressBlocked | Blocked)  # retryable, not a policy verdict


def test_stuck_names_starve_neither_other_posts_nor_the_default_executor(inbox: _Server, face: str) -> None:
    """Forty POSTs to four names that never resolve, beside POSTs to a live receiver. The stuck names
    hold one resolver thread each (not one per POST) and never the loop's default executor, where the
    pause gate reads the graph; without that the live POSTs and the gate would wait behind them."""
    stuck = {f"stuck-{i}.test" for i in range(4)}
    resolver = StuckResolver({"inbox.test": ["127.0.0.1"]}, stuck=stuck)
    urls = [f"http://{name}/" for name in sorted(stuck) for _ in range(10)]
    urls += [_url(inbox, f"/live-{i}") for i in range(4)]
    transport = make_webhook_transport(allow_private=True, rules=LOOPBACK, resolver=resolver)
    try:
        if face == "post":
            outcomes: list[object] = list(_post_concurrently_probing_the_default_executor(transport, urls))
        else:
            outcomes = list(_post_all_within(transport, urls, seconds=5, release=resolver.release))
    finally:
        resolver.release.set()

    expected_stuck = httpx.ConnectError if face == "post" else Unreachable
    assert all(isinstance(outcome, expected_stuck) for outcome in outcomes[:40]), outcomes[:40]
    for outcome in outcomes[40:]:
        assert outcome == (200 if face == "post" else Answered(200, b'{"ok": true}', "application/json"))
    assert sorted(inbox.seen.paths) == [f"/live-{i}" for i in range(4)]
    assert sorted(host for host, _ in resolver.calls if host in stuck) == sorted(stuck)  # one each


def _post_concurrently_probing_the_default_executor(
    transport: AsyncSafeTransport, urls: list[str]
) -> list[object]:
    """Every URL posted at once; meanwhile the loop's default executor must answer within a second."""

    async def run() -> list[object]:
        loop = asyncio.get_running_loop()
        posts = [asyncio.ensure_future(transport.post(url, b"{}", [], timeout=0.5)) for url in urls]
        await asyncio.sleep(0.1)  # every resolution has started by now
        async with asyncio.timeout(1):  # what SendGate.allows does to read the graph
            assert await loop.run_in_executor(None, lambda: "read") == "read"
        async with asyncio.timeout(3):
            answers = await asyncio.gather(*posts, return_exceptions=True)
        await transport.aclose()
        return [answer[0] if isinstance(answer, tuple) else answer for answer in answers]

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


def _post_all_within(
    transport: AsyncSafeTransport, urls: list[str], *, seconds: float, release: threading.Event
) -> list[PostResult]:
    """``WebhookPoster.post_all`` of every URL at once, which must return within ``seconds``; then
    ``release`` frees the stuck resolutions, so a run that failed ends too."""
    poster = WebhookPoster(transport, secret=SECRET, concurrency=64, timeout=0.5)
    items = [Outgoing(url=url, body=b"{}", msg_id=f"d-{i}") for i, url in enumerate(urls)]
    results: list[PostResult] = []
    caller = threading.Thread(target=lambda: results.extend(poster.post_all(items)), daemon=True)
    caller.start()
    caller.join(seconds)
    returned = not caller.is_alive()
    release.set()
    caller.join()
    poster.close()
    assert returned, "post_all waited for names that never resolve"
    return results


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


FD_SLACK = 2  # descriptors an event loop may open lazily on its first connection


def _within(seconds: float, condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_idle_connections_stay_bounded_across_many_hosts(inbox: _Server, face: str) -> None:
    """Sixty destinations in turn, each leaving a kept-alive connection: at most ``max_connections`` of
    them stay open in total (ours and the server's ends of the sockets), the oldest closed first."""
    hosts = {f"h{i}.test": ["127.0.0.1"] for i in range(60)}
    transport = make_webhook_transport(
        allow_private=True, rules=LOOPBACK, resolver=DictResolver(hosts), max_connections=4
    )
    with _over(face, transport, timeout=2) as client:
        fds_before = _open_fds()
        for host in hosts:
            assert client.post(_url(inbox, "/a", host=host), json={}).json() == {"ok": True}
            assert transport.open_connections <= 4 + 1  # the one just pushed out may still be closing
        client.idle(0.05)
        assert transport.open_connections <= 4
        assert _within(2, lambda: _open_fds() - fds_before <= 2 * 4 + FD_SLACK)  # both ends of each
        assert client.post(_url(inbox, "/again", host="h59.test"), json={}).json() == {"ok": True}
    assert inbox.seen.connections == 60  # the most recent destination's connection was reused


def test_idle_connections_are_closed_at_keepalive_expiry_without_further_posts(
    inbox: _Server, face: str
) -> None:
    hosts = {f"h{i}.test": ["127.0.0.1"] for i in range(3)}
    transport = AsyncSafeTransport(
        allow_private=True, rules=LOOPBACK, resolver=DictResolver(hosts), keepalive_expiry=0.5
    )
    with _over(face, transport, timeout=2) as client:
        fds_before = _open_fds()
        for host in hosts:
            client.post(_url(inbox, "/a", host=host), json={})
        assert transport.open_connections == 3
        client.idle(1.2)
        assert transport.open_connections == 0
        assert _within(2, lambda: _open_fds() <= fds_before + FD_SLACK)  # the server's ends closed too
