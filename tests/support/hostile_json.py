"""Request bodies no JSON endpoint may answer with a 500: each is a clean 400 from a strict parser."""

from __future__ import annotations

import pytest

HOSTILE_BODIES = [
    pytest.param(b"[" * 10_000 + b"]" * 10_000, id="nesting-10k-levels"),
    pytest.param(b'{"n": ' + b"9" * 10_000 + b"}", id="10k-digit-integer"),
    pytest.param(b'{"id": "\xc3\x28"}', id="invalid-utf8"),
    pytest.param(b'{"id": "\\ud800"}', id="lone-surrogate"),
    pytest.param(b'{"n": NaN}', id="nan"),
    pytest.param(b"[1, 2, 3]", id="non-object"),
]
