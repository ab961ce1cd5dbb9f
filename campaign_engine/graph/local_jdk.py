"""The Java runtime the local Neo4j launcher runs on: the newest JDK (17 or later) this machine has.

Neo4j 5 runs on Java 17 and later, and a newer JDK's compilers and collector spend less CPU on the same
work: over ``tests/integration/campaigns`` (413 tests, three workers sharing one launcher), four pairs
run back to back, the launcher used 280-352 s of CPU on Temurin 25 against 344-402 s on OpenJDK 17
(11-20 % less in each pair) and the tests took 181-217 s against 216-249 s. So the launcher does not
settle for the ``java`` on ``PATH`` when a newer JDK is installed beside it (``$JAVA_HOME``,
``/usr/lib/jvm``). ``CAMPAIGN_NEO4J_JAVA`` names a ``java`` to use instead of choosing.

A JDK's version is read from its ``release`` file, as the JDK's own tools do; a runtime without one
is taken for the oldest that Neo4j supports. JDK 24 and later warn at start-up about Neo4j's use of
``sun.misc.Unsafe`` and of native libraries (JNA); ``Jdk.options`` allows both so that the launcher's
log says what Neo4j says, and a JDK that does not know those options is never given them. The JDK's
own base class archive was made without native access, so such a JVM logs two ``[error][cds]`` lines
saying it leaves out that archive's module graph: the launcher's class archive is still mapped
(``test_local_neo4j.py`` checks it), only the module graph is resolved at start as without one.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["JAVA_VARIABLE", "OLDEST", "Jdk", "find_jdk"]

JAVA_VARIABLE = "CAMPAIGN_NEO4J_JAVA"
OLDEST = 17  # the oldest Java that Neo4j 5 runs on
_JVM_ROOTS = (Path("/usr/lib/jvm"),)  # where Debian, Ubuntu and Adoptium's packages install JDKs
_RELEASE = re.compile(r'^JAVA_VERSION="((?:1\.)?(\d+)[^"]*)"', re.MULTILINE)  # 25.0.3, 1.8.0_292
_BUILD = re.compile(r'^JAVA_RUNTIME_VERSION="([^"]+)"', re.MULTILINE)  # 25.0.3+9-LTS


@dataclass(frozen=True)
class Jdk:
    java: Path
    version: int
    """The feature release: 17, 21, 25."""
    build: str = "unknown"
    """The exact runtime (``25.0.3+9-LTS``): a class archive serves only the build that wrote it."""

    def options(self) -> tuple[str, ...]:
        if self.version >= 24:
            return ("--sun-misc-unsafe-memory-access=allow", "--enable-native-access=ALL-UNNAMED")
        return ()


def _described(java: Path) -> Jdk:
    try:
        text = (java.resolve().parents[1] / "release").read_text(errors="replace")
    except OSError:
        text = ""
    release, build = _RELEASE.search(text), _BUILD.search(text)
    if release is None:
        return Jdk(java, OLDEST)
    return Jdk(java, int(release.group(2)), (build or release).group(1))


def _candidates(environ: Mapping[str, str], roots: Iterable[Path]) -> Iterable[Path]:
    on_path = shutil.which("java", path=environ.get("PATH"))
    if on_path:
        yield Path(on_path)
    if environ.get("JAVA_HOME"):
        yield Path(environ["JAVA_HOME"]) / "bin" / "java"
    for root in roots:
        yield from sorted(root.glob("*/bin/java"))


def find_jdk(environ: Mapping[str, str] = os.environ, roots: Iterable[Path] = _JVM_ROOTS) -> Jdk:
    """``CAMPAIGN_NEO4J_JAVA`` when set, else the newest JDK found (the one on ``PATH`` among equals)."""
    chosen = environ.get(JAVA_VARIABLE)
    if chosen:
        return _described(Path(shutil.which(chosen, path=environ.get("PATH")) or chosen))
    runnable = (java for java in _candidates(environ, roots) if java.is_file() and os.access(java, os.X_OK))
    usable = [jdk for jdk in map(_described, runnable) if jdk.version >= OLDEST]
    if not usable:
        raise RuntimeError(f"the local Neo4j launcher needs a Java {OLDEST} or later runtime (java on PATH)")
    return max(usable, key=lambda jdk: jdk.version)  # max keeps the first of equals: PATH's
