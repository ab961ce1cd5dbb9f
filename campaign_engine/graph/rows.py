"""A statement's records as plain dicts, cheaply, for the reads that stream many rows.

``Record.data()`` walks every value looking for nodes and relationships to convert: 41 us for an
export row of 19 scalar columns against 3 us for pairing the keys with the values. Under a day of
mixed load (``bench.load``) the recipients export spent most of the API's GIL time there, and every
app request of the process waited behind it. Statements read this way return scalars and lists only.
"""

from __future__ import annotations

from typing import Any

import neo4j

__all__ = ["plain_rows"]


def plain_rows(result: neo4j.Result) -> list[dict[str, Any]]:
    """Every record of ``result`` as ``{column: value}``; the values as the driver decoded them."""
    keys = result.keys()
    return [dict(zip(keys, record, strict=True)) for record in result]
