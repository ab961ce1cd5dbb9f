"""Which Java the local Neo4j launcher runs on: the newest JDK installed (17 or later), the one on PATH
among equals, ``CAMPAIGN_NEO4J_JAVA`` over the choice, and a newer JDK's warnings allowed away."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign_engine.graph.local_jdk import JAVA_VARIABLE, Jdk, find_jdk


def _jdk(root: Path, name: str, release: str | None) -> Path:
    home = root / name
    java = home / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    if release is not None:
        (home / "release").write_text(release)
    return java


def test_the_newest_installed_jdk_is_chosen_over_the_one_on_path(tmp_path: Path) -> None:
    jvm = tmp_path / "jvm"
    on_path = _jdk(jvm, "java-17", 'JAVA_RUNTIME_VERSION="17.0.15+6"\nJAVA_VERSION="17.0.15"\n')
    newest = _jdk(jvm, "temurin-25", 'JAVA_VERSION="25.0.3"\nJAVA_RUNTIME_VERSION="25.0.3+9-LTS"\n')
    _jdk(jvm, "temurin-21", 'JAVA_VERSION="21.0.8"\n')
    _jdk(jvm, "java-8", 'JAVA_VERSION="1.8.0_292"\n')

    chosen = find_jdk({"PATH": str(on_path.parent)}, roots=[jvm])

    assert chosen == Jdk(newest, 25, "25.0.3+9-LTS")


def test_among_equals_the_one_on_path_wins_and_older_ones_are_never_chosen(tmp_path: Path) -> None:
    jvm = tmp_path / "jvm"
    _jdk(jvm, "a-21", 'JAVA_VERSION="21.0.1"\n')
    on_path = _jdk(tmp_path / "elsewhere", "b-21", 'JAVA_VERSION="21.0.2"\n')
    _jdk(jvm, "java-11", 'JAVA_VERSION="11.0.2"\n')

    assert find_jdk({"PATH": str(on_path.parent)}, roots=[jvm]).java == on_path

    only_old = tmp_path / "old"
    _jdk(only_old, "java-11", 'JAVA_VERSION="11.0.2"\n')
    with pytest.raises(RuntimeError, match="Java 17 or later"):
        find_jdk({"PATH": ""}, roots=[only_old])


def test_the_variable_names_the_java_and_a_runtime_without_release_is_taken_for_17(tmp_path: Path) -> None:
    jvm = tmp_path / "jvm"
    _jdk(jvm, "temurin-25", 'JAVA_VERSION="25.0.3"\n')
    named = _jdk(tmp_path / "own", "custom", None)

    chosen = find_jdk({"PATH": "", JAVA_VARIABLE: str(named)}, roots=[jvm])

    assert chosen == Jdk(named, 17, "unknown")


def test_only_a_jdk_that_knows_the_options_is_given_them() -> None:
    java = Path("/usr/bin/java")
    assert Jdk(java, 17).options() == ()
    assert Jdk(java, 21).options() == ()
    assert Jdk(java, 25).options() == (
        "--sun-misc-unsafe-memory-access=allow",
        "--enable-native-access=ALL-UNNAMED",
    )
