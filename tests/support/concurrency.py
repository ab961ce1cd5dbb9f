"""Calls that start together: the real concurrency the locking tests need, without thread plumbing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["at_once", "wait_for"]

T = TypeVar("T")


def at_once(call: Callable[..., T], arguments: Sequence[tuple[Any, ...]], *, timeout: float = 60) -> list[T]:
    """``call(*args)`` for each ``args``, each in its own thread, all released by one barrier.

    Returns the results in the order of ``arguments``; the first failure is raised here (a plain
    thread would only print it), and so is a call still running after ``timeout`` seconds.
    """
    barrier = threading.Barrier(len(arguments))

    def run(args: tuple[Any, ...]) -> T:
        barrier.wait(timeout=timeout)
        return call(*args)

    with ThreadPoolExecutor(max_workers=len(arguments)) as pool:
        futures = [pool.submit(run, args) for args in arguments]
        return [future.result(timeout=timeout) for future in futures]


def wait_for(what: str, check: Callable[[], bool], *, timeout: float, every: float = 0.05) -> None:
    """Poll ``check`` until it holds; past ``timeout`` seconds fail naming ``what`` (waits are bounded)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)
