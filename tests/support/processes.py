"""Our own processes in end-to-end tests: ``python -m campaign_engine.cli ...`` as a user starts them,
with an explicit environment, their output in files, and stopped by their own pid only (SIGTERM, then
SIGKILL), never by name, so a test never touches another test's processes or a developer's."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


class CliProcess:
    """One ``campaign-engine`` child: stdout and stderr into ``log``, or stderr apart when ``stderr``
    names its own file (the structured log on stderr, the command's output on stdout)."""

    def __init__(
        self, args: Sequence[str], env: Mapping[str, str], log: Path, *, stderr: Path | None = None
    ) -> None:
        self.log = log
        self.stderr = stderr
        self._files = [log.open("ab")] + ([stderr.open("ab")] if stderr is not None else [])
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "campaign_engine.cli", *args],
            env=dict(env),
            cwd=REPO_ROOT,
            stdout=self._files[0],
            stderr=self._files[1] if stderr is not None else subprocess.STDOUT,
        )

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill9(self) -> None:
        """A crash: SIGKILL, no clean shutdown."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=10)

    def stop(self, *, timeout: float = 30) -> None:
        """SIGTERM (the process finishes the batch in hand), SIGKILL if it has not exited in ``timeout``."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        for file in self._files:
            file.close()
