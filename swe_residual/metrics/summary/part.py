"""How the parts of ``summary.json`` are read and written: the rules, in one place.

Every part of the summary is a frozen pydantic model derived from :class:`Part`
(:mod:`swe_residual.metrics.summary.model`, and the intervals' parts in
:mod:`swe_residual.metrics.intervals`).

Reading (``model_validate``) is lenient the way the renderers always were: a key a
hand-written or older summary lacks, or holds as null, reads as its field's default (None, 0
or empty), never as an error; a part that is not an object reads as an empty part; a key a
part does not know is ignored (the top level keeps them: :class:`~swe_residual.metrics.summary.model.Summary`).

Writing (``model_dump(mode="json", by_alias=True)``, done by
:func:`swe_residual.metrics.summary.model.summary_json`): the fields in the order they are declared,
every figure as computed (nothing rounded; an int stays an int), tuples as lists (an interval
is ``[low, high]``), and a key left out where its field's annotation says so: :data:`Omit.NONE`
(when the value is None), :data:`Omit.EMPTY` (when it is None, empty, 0 or False) or
:class:`OmitUnless` (unless another field of the part is set).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import (
    BaseModel, ConfigDict, SerializerFunctionWrapHandler, WithJsonSchema, model_serializer, model_validator,
)  # fmt: skip

__all__ = ["Bound", "Number", "Omit", "OmitUnless", "Part"]

#: A figure as computed: a float, or an int where the metric gives one (``5`` stays ``5``, never ``5.0``).
Number = Annotated[Union[float, int], WithJsonSchema({"type": "number"})]
#: An interval ``[low, high]`` (a list in the file, a tuple in the model).
Bound = tuple[float, float]


class Omit(Enum):
    """When a key is left out of the file."""

    NONE = "the key is left out when its value is None"
    EMPTY = "the key is left out when its value is None, empty, 0 or False"


@dataclass(frozen=True)
class OmitUnless:
    """The key is left out unless the part's field ``field`` is set (not None, empty, 0 or False)."""

    field: str


Rule = Union[Omit, OmitUnless]


def _rules_in(annotation: Any) -> list[Rule]:
    if get_origin(annotation) is not Annotated:
        return []
    return [m for m in get_args(annotation)[1:] if isinstance(m, (Omit, OmitUnless))]


@cache
def _omissions(part: type[Part]) -> tuple[tuple[str, str, Rule], ...]:
    """(key in the file, attribute, rule) of every field and computed field of ``part`` with a rule."""
    found = []
    for name, info in part.model_fields.items():
        for rule in [m for m in info.metadata if isinstance(m, (Omit, OmitUnless))]:
            found.append((info.alias or name, name, rule))
    for name, computed in part.model_computed_fields.items():
        for rule in _rules_in(computed.return_type):
            found.append((computed.alias or name, name, rule))
    return tuple(found)


@cache
def _keys_read_as_default(part: type[Part]) -> frozenset[str]:
    """The keys whose null reads as the field's default: those whose default is not None."""
    return frozenset(key for name, info in part.model_fields.items() if info.default is not None
                     for key in (name, info.alias) if key)


class Part(BaseModel):
    """A part of the summary: frozen, read leniently, written by the field's omission rules."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _read_leniently(cls, raw: Any) -> Any:
        if isinstance(raw, BaseModel):
            return raw
        if not isinstance(raw, Mapping):
            return {}
        defaulted = _keys_read_as_default(cls)
        return {key: value for key, value in raw.items() if value is not None or key not in defaulted}

    # No return annotation: pydantic then documents the part's fields as its serialization schema
    # (docs/schema/), where an annotation would replace them.
    @model_serializer(mode="wrap")
    def _leave_out(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        out: dict[str, Any] = handler(self)
        for key, name, rule in _omissions(type(self)):
            if rule is Omit.NONE:
                omitted = getattr(self, name) is None
            elif rule is Omit.EMPTY:
                omitted = not getattr(self, name)
            else:
                omitted = not getattr(self, rule.field)
            if omitted:
                out.pop(key, None)
        return out
