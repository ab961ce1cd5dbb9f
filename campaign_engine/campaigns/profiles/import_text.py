"""An uploaded file's text: checked to be UTF-8 as it arrives, read without a byte-order mark.

Both imports (``csv_import.py``, ``roster_import.py``) and both ways in (``api/imports.py``,
``cli/imports.py``) read files this way, so the rules live here once.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator

__all__ = ["Utf8Check", "without_bom"]


class Utf8Check:
    """Where the first byte that is not UTF-8 is, fed block by block as a file or a body arrives, so a
    file is refused before any of its rows is written (the import reads it only once it is whole)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._offset = 0

    def feed(self, block: bytes) -> int | None:
        """None, or the 1-based offset of the first bad byte."""
        try:
            self._decoder.decode(block)
        except UnicodeDecodeError as exc:
            return self._offset + exc.start + 1
        self._offset += len(block)
        return None

    def end(self) -> int | None:
        """None, or the offset of a character the file ends inside."""
        try:
            self._decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return self._offset
        return None


def without_bom(text: Iterable[str]) -> Iterator[str]:
    """``text`` without a leading byte-order mark: spreadsheets write one, and callers decode plain utf-8."""
    first = True
    for chunk in text:
        if first:
            chunk, first = chunk.removeprefix("\ufeff"), False
        yield chunk
