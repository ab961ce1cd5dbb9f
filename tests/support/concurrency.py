"""Calls that start together: the real concurrency the locking tests need, without thread plumbing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["at_once"]

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
