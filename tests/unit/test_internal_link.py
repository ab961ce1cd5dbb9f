"""``internalLink.path`` keeps the app's origin under a real WHATWG URL parser (Node's ``URL``).

The old rule (starts with ``/``, not ``//``) let through paths that browsers resolve to another host;
each of those is refused here, and every path the new grammar accepts, from a seeded random sample
over the characters parsers treat specially, resolves against several origins to that same origin.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest
from pydantic import ValidationError

from campaign_engine.domain.content import InternalLink

BYPASSES = [
    "/\\evil.example",
    "/\\t/evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
    "/\r/evil.example",
    "/\\/evil.example",
    "//evil.example",
    "/ /evil.example",
    "/\x00/evil.example",
    "/\u3000/evil.example",
]
ORIGINS = ["https://app.example", "https://school.example:8443", "http://localhost:5173"]
_ALPHABET = "/\\?#%@:.;=&+ \t\n\r\x00\x7f~!$'()*,-_aZ09\u00e9\u202e"


def _resolve(paths: list[str]) -> list[list[str]]:
    """Each path's origin resolved against each of ``ORIGINS``, by Node's WHATWG ``URL``."""
    node = shutil.which("node")
    assert node is not None, "node (used to build the admin console) is required for this test"
    script = (
        "const [paths, origins] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(paths.map(p => origins.map(o => new URL(p, o).origin))));"
    )
    done = subprocess.run(
        [node, "-e", script], input=json.dumps([paths, ORIGINS]), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _accepted(path: str) -> bool:
    try:
        InternalLink.model_validate({"type": "internalLink", "path": path})
    except ValidationError:
        return False
    return True


def test_the_known_bypasses_leave_the_origin_and_are_refused() -> None:
    # The parser really does send these elsewhere (so the refusal matters), and the grammar refuses them.
    resolved = zip(BYPASSES, _resolve(BYPASSES), strict=True)
    dangerous = [path for path, origins in resolved if origins != ORIGINS]
    assert len(dangerous) >= 6
    assert [path for path in BYPASSES if _accepted(path)] == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_accepted_path_keeps_every_origin(seed: int) -> None:
    rng = random.Random(seed)
    candidates = ["/" + "".join(rng.choices(_ALPHABET, k=rng.randint(0, 12))) for _ in range(3000)]
    accepted = sorted({path for path in candidates if _accepted(path)})
    assert len(accepted) > 100  # the sample exercises the grammar, not just its refusals
    moved = [path for path, origins in zip(accepted, _resolve(accepted), strict=True) if origins != ORIGINS]
    assert moved == []


@pytest.mark.parametrize("path", ["/", "/inbox", "/a/b?x=1&y=%20#top", "/@me/settings", "/caf%C3%A9"])
def test_ordinary_app_paths_are_accepted(path: str) -> None:
    assert _accepted(path)
