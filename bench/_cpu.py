"""Where a measured run's CPU went: this process and the local Neo4j launcher's JVM, by thread group.

On a 2-core machine the rate is bounded by CPU, not by waiting: the figure that explains it is how many
core-seconds the Bolt workers (running our statements), the JIT compiler threads (compiling Neo4j
itself, for minutes after a start) and the worker's own Python took. Linux ``/proc`` only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuMeter", "CpuReading", "launcher_pid"]

_TICK = os.sysconf("SC_CLK_TCK")
_CORES = os.cpu_count() or 1
_GROUPS = {"C2 CompilerThre": "jit", "C1 CompilerThre": "jit", "neo4j.BoltWorke": "bolt"}


def launcher_pid(bolt_uri: str) -> int | None:
    """The pid of the ``neo4j-launcher.jar`` JVM serving ``bolt_uri``'s port, if it runs here."""
    port = bolt_uri.rsplit(":", 1)[-1]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"neo4j-launcher.jar") for a in argv) and port.encode() in argv:
            return int(entry.name)
    return None


def _threads(pid: int | None) -> dict[str, float]:
    seconds = dict.fromkeys(("bolt", "jit", "other"), 0.0)
    if pid is None:
        return seconds
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            raw = (task / "stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        group = _GROUPS.get(re.sub(r"\d+$", "", name).rstrip(), "other")
        seconds[group] += (int(fields[11]) + int(fields[12])) / _TICK
    return seconds


def _machine_idle() -> float:
    """Core-seconds every core of the machine has spent idle since boot (``/proc/stat``)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return (int(fields[3]) + int(fields[4])) / _TICK  # idle + iowait


@dataclass(frozen=True)
class CpuReading:
    """Core-seconds of one measured run, and how much of the machine stayed idle."""

    wall: float
    bolt: float
    jit: float
    jvm_other: float
    own: float
    idle: float
    local: bool

    @property
    def jit_share(self) -> float:
        """The JIT's share of the machine's core-seconds: high while Neo4j still compiles itself."""
        return self.jit / (_CORES * self.wall) if self.local else 0.0

    def line(self) -> str:
        if not self.local:
            return f"CPU over {self.wall:.1f} s of wall time: this process {self.own:.1f} s (Neo4j not local)"
        return (
            f"CPU over {self.wall:.1f} s of wall time ({_CORES} cores = {_CORES * self.wall:.1f} core-s): "
            f"Neo4j Bolt workers {self.bolt:.1f} s, Neo4j JIT compiler {self.jit:.1f} s, "
            f"rest of the JVM {self.jvm_other:.1f} s, this process {self.own:.1f} s; "
            f"the machine idle {self.idle:.1f} core-s"
        )


class CpuMeter:
    """CPU seconds between ``start`` and ``reading``: Neo4j's Bolt workers, its JIT, the rest of the JVM,
    this process (the worker's pipeline; the stand-in runs elsewhere), and the machine's idle time."""

    def __init__(self, bolt_uri: str) -> None:
        self._pid = launcher_pid(bolt_uri)
        self.start()

    def start(self) -> None:
        self._jvm = _threads(self._pid)
        self._own = sum(os.times()[:2])
        self._idle = _machine_idle()

    def reading(self, wall: float) -> CpuReading:
        now = _threads(self._pid)
        jvm = {group: now[group] - self._jvm[group] for group in now}
        return CpuReading(
            wall=wall,
            bolt=jvm["bolt"],
            jit=jvm["jit"],
            jvm_other=jvm["other"],
            own=sum(os.times()[:2]) - self._own,
            idle=_machine_idle() - self._idle,
            local=self._pid is not None,
        )
