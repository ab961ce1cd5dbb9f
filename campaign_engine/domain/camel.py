"""The one base of every model that speaks camelCase on the wire and snake_case in Python.

Each field's wire name is the camelCase of its Python name (``alias_generator``), so a model spells an
alias by hand only where the two differ: the Python keywords ``pass`` and ``not``, and audit's
``from``/``to`` range (``since``/``until`` in Python). ``populate_by_name``
lets our own code build a model by field names; ``model_dump()`` without ``by_alias`` still emits
field names, as it did with hand-written aliases. Strictness (``extra``, ``frozen``) stays with each
model or its family's base: pydantic merges a subclass's ``model_config`` into this one.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["CamelModel"]


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
