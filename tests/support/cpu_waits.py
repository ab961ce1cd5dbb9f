"""How much of a span of wall time a busy machine explains: Linux's per-thread ``schedstat``.

``/proc/<pid>/task/<tid>/schedstat`` holds a thread's nanoseconds on a CPU and runnable on a run queue.
A span of the API's loop thread (a callback, a probe answered) splits into its CPU (computing on the
loop), its run-queue wait (a busy machine) and the rest, which is blocked: on I/O or a lock (the fault
the tests look for), or on the interpreter lock. That lock is held by one thread of the process at a
time and handed over every few milliseconds, so a long wait for it means its holder itself waited for a
CPU (the other threads' run-queue wait over the span explains that much), or computed in a call that
keeps the lock (their CPU: a fault, not excused). Blocked time that no thread of the process spent on a
CPU or a run queue, while a sampler could not find the loop thread waiting in a call, is the process
stopped as a whole: a page fault with the lock held, a virtual machine not scheduled. A loop thread the
sampler finds in a system call that is no lock's wait (``/proc/<tid>/syscall``: a sleep, a socket read)
is blocked by its own code: nothing else excuses that.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

__all__ = ["Split", "Threads", "split"]


@dataclass(frozen=True)
class Split:
    """One span of the loop thread, in seconds; ``others`` is the run-queue wait of the process's other
    threads over it."""

    took: float
    cpu: float
    runqueue: float
    others: float
    others_cpu: float = 0.0
    found: bool = True
    """A sampler found the loop thread waiting, the interpreter lock released, during the span (or none
    looked)."""
    in_call: bool = False
    """... in a system call other than a lock's (a sleep, a socket): its own wait, whatever else waited."""

    @property
    def blocked(self) -> float:
        return max(0.0, self.took - self.cpu - self.runqueue)

    @property
    def stalled(self) -> float:
        """Blocked time no thread of the process spent on a CPU or a run queue, the loop not found."""
        return 0.0 if self.found else max(0.0, self.blocked - self.others - self.others_cpu)

    @property
    def own(self) -> float:
        """What no busy machine explains: the span less the loop thread's wait for a CPU, the blocked
        time other threads' waits for a CPU cover, and a stall of the whole process. The loop's own
        computing, and a wait for a lock another thread computes with, are never excused."""
        if self.in_call:
            return self.took - self.runqueue
        return self.took - self.runqueue - min(self.blocked, self.others) - self.stalled


class Threads:
    """The threads of process ``pid``, read through file descriptors kept open (a microsecond a read);
    the list of threads is read again at most every ``relist`` seconds."""

    def __init__(self, pid: int | str = "self", *, relist: float = 0.2) -> None:
        self.task = f"/proc/{pid}/task"
        self.relist = relist
        self._fds: dict[int, int] = {}
        self._listed = -relist

    def read(self, *, start: bool) -> dict[int, tuple[int, int]]:
        """Every thread's nanoseconds on a CPU and on a run queue so far. At the ``start`` of a span the
        threads started since the last listing are added (at most every ``relist`` seconds); at its end
        not, so a span never counts a thread's time from before it."""
        now = time.monotonic()
        if start and now - self._listed >= self.relist:
            self._listed = now
            for tid in {int(t) for t in os.listdir(self.task)} - self._fds.keys():
                with contextlib.suppress(OSError):  # gone already
                    self._fds[tid] = os.open(f"{self.task}/{tid}/schedstat", os.O_RDONLY)
        found: dict[int, tuple[int, int]] = {}
        for tid, fd in list(self._fds.items()):
            try:
                on_cpu, waiting = os.pread(fd, 64, 0).split()[:2]
            except (OSError, ValueError):  # the thread ended: its file fails or reads empty
                os.close(self._fds.pop(tid))
                continue
            found[tid] = int(on_cpu), int(waiting)
        return found

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def split(
    before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]], *, thread: int, took: float
) -> Split:
    """The span of ``thread`` that took ``took`` seconds, between two ``Threads.read``."""
    cpu, runqueue = (after[thread][i] - before[thread][i] for i in (0, 1))
    others = [
        (a[0] - before[t][0], a[1] - before[t][1]) for t, a in after.items() if t != thread and t in before
    ]
    return Split(took=took, cpu=cpu / 1e9, runqueue=runqueue / 1e9, others=sum(o[1] for o in others) / 1e9,
                 others_cpu=sum(o[0] for o in others) / 1e9)  # fmt: skip
