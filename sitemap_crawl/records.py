"""Dict and tuple forms of the record dataclasses, generated once from their fields.

:class:`RecordCodec` reads ``dataclasses.fields()`` and the type hints of a record
class once and compiles four small functions for it (``to_dict``, ``from_dict``,
``to_tuple``, ``from_tuple``), so that adding a field to a record means editing the
dataclass and nothing else. No reflection happens per call: the functions are as
plain as hand-written ones (nested records are inlined). Pure: no Scrapy here.

Field shapes (from the type hints):

* a record (``NewsStory | None``): a nested dict / tuple, or None;
* a list of records (``list[Image]``): a list of dicts / tuples (an empty list
  travels as None in the tuple form, which pickles smaller);
* a plain list (``list[str]``): copied into the dict form;
* anything else: the value as it is (``float`` fields pass through ``float()``
  in ``from_dict``).

``from_dict`` is tolerant: a missing key takes the field's default; a field
without default is required, unless its metadata gives ``MISSING_KEY``, the
value a missing or empty entry takes. A flat record (no nested record) is made
with ``cls(**data)``.

A field whose metadata sets ``CONDITIONAL_KEY`` is *conditional*: left out of the
dict form while it is None (a field that only some runs fill, such as the queue's
``attempt``). Conditional fields come last in the dataclass, so the dict form keeps
the field order either way.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, Generic, TypeVar

R = TypeVar("R")

MISSING_KEY = "sitemap_crawl.missing"
"""Field metadata key: the value ``from_dict`` gives a required field missing from the dict."""

CONDITIONAL_KEY = "sitemap_crawl.conditional"
"""Field metadata key: when true, the field is left out of the dict form while it is None."""

_SCALAR, _LIST, _RECORD, _RECORD_LIST = "scalar", "list", "record", "record list"


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    shape: str
    record: type | None  # the nested record class of a record or record-list field
    to_float: bool
    default: Any  # dataclasses.MISSING when required
    factory: Any  # dataclasses.MISSING when none
    missing: Any  # MISSING_KEY metadata, dataclasses.MISSING when none
    conditional: bool  # CONDITIONAL_KEY metadata: left out of the dict form while None


def _record_class(hint: Any) -> type | None:
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def _describe(cls: type) -> list[_Field]:
    hints = typing.get_type_hints(cls)
    described = []
    for spec in dataclasses.fields(cls):
        if not spec.init:
            raise TypeError(f"{cls.__name__}.{spec.name}: a record field must be an __init__ argument")
        hint = hints[spec.name]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        record: type | None = None
        if origin is list:
            record = _record_class(args[0]) if args else None
            shape = _RECORD_LIST if record is not None else _LIST
        elif origin in (types.UnionType, typing.Union) and type(None) in args:
            others = [arg for arg in args if arg is not type(None)]
            record = _record_class(others[0]) if len(others) == 1 else None
            shape = _RECORD if record is not None else _SCALAR
        else:
            record = _record_class(hint)
            shape = _RECORD if record is not None else _SCALAR
        described.append(
            _Field(
                spec.name,
                shape,
                record,
                hint is float,
                spec.default,
                spec.default_factory,
                spec.metadata.get(MISSING_KEY, dataclasses.MISSING),
                bool(spec.metadata.get(CONDITIONAL_KEY)),
            )
        )
    conditional = [field.conditional for field in described]
    if True in conditional and False in conditional[conditional.index(True) :]:
        raise TypeError(f"{cls.__name__}: conditional fields must come after all the others")
    return described


class _Source:
    """Names the values a generated function refers to (classes, defaults, nested functions)."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {}

    def name(self, value: Any, hint: str) -> str:
        for existing, known in self.namespace.items():
            if known is value:
                return existing
        name = f"_{hint}{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def compile(self, name: str, source: str) -> Callable[..., Any]:
        exec(compile(source, f"<{name}>", "exec"), self.namespace)  # source generated from field names
        function: Callable[..., Any] = self.namespace.pop(name)
        return function


def _is_flat(cls: type) -> bool:
    return all(field.shape in (_SCALAR, _LIST) for field in _describe(cls))


def _out_expr(cls: type, obj: str, depth: int, as_dict: bool, context: tuple[str, ...] = ()) -> str:
    """An expression building the dict form (``as_dict``) or the tuple form (``context`` fields
    left out) of the record held by ``obj``."""
    items = []
    for field in _describe(cls):
        if field.name in context or (as_dict and field.conditional):
            continue
        value = f"{obj}.{field.name}"
        if field.record is not None:
            inner = f"_v{depth}"
            made = _out_expr(field.record, inner, depth + 1, as_dict)
            if field.shape == _RECORD:
                value = f"(None if ({inner} := {value}) is None else {made})"
            else:  # no comprehension for an empty list (twice as fast on a bare page); None in a tuple
                value = f"([{made} for {inner} in {value}] if {value} else {'[]' if as_dict else 'None'})"
        elif field.shape == _LIST and as_dict:
            value = f"list({value})"
        items.append(f"{field.name!r}: {value}" if as_dict else value)
    return "{" + ", ".join(items) + "}" if as_dict else "(" + "".join(f"{item}, " for item in items) + ")"


def _from_tuple_expr(
    cls: type, values: str, depth: int, source: _Source, context: tuple[str, ...] = (), unpacked: bool = False
) -> str:
    """An expression making the record of the tuple held by ``values`` (``context`` fields by name;
    with ``unpacked``, the tuple's values are in locals named after the fields)."""
    arguments = []
    position = 0
    for field in _describe(cls):
        if field.name in context:
            arguments.append(f"_f_{field.name}")
            continue
        value = f"_f_{field.name}" if unpacked else f"{values}[{position}]"
        position += 1
        inner = f"_t{depth}"
        if field.shape == _RECORD:
            assert field.record is not None
            value = f"(None if {value} is None else {_from_tuple_expr(field.record, value, depth + 1, source)})"
        elif field.shape == _RECORD_LIST:
            assert field.record is not None
            made = _from_tuple_expr(field.record, inner, depth + 1, source)
            value = f"([{made} for {inner} in {value}] if {value} else [])"
        arguments.append(value)
    if _is_flat(cls) and not context and not unpacked:
        return f"{source.name(cls, cls.__name__)}(*{values})"
    return f"{source.name(cls, cls.__name__)}({', '.join(arguments)})"


def _from_dict_expr(cls: type, data: str, depth: int, source: _Source) -> str:
    """An expression making the record of the dict held by ``data``."""
    made = source.name(cls, cls.__name__)
    if _is_flat(cls):
        return f"{made}(**{data})"
    arguments = []
    for field in _describe(cls):
        key = repr(field.name)
        inner = f"_d{depth}"
        if field.shape == _RECORD:
            assert field.record is not None
            nested = _from_dict_expr(field.record, inner, depth + 1, source)
            value = f"(({nested}) if isinstance(({inner} := {data}.get({key})), dict) else None)"
        elif field.shape == _RECORD_LIST:
            assert field.record is not None
            nested = _from_dict_expr(field.record, inner, depth + 1, source)
            value = f"[{nested} for {inner} in {data}.get({key}) or ()]"
        elif field.missing is not dataclasses.MISSING:
            value = f"({data}.get({key}) or {source.name(field.missing, 'missing')})"
        elif field.default is dataclasses.MISSING and field.factory is dataclasses.MISSING:
            value = f"{data}[{key}]"
        elif field.factory is not dataclasses.MISSING:
            value = f"list({data}.get({key}) or ())" if field.shape == _LIST else f"{data}.get({key}, {made}_f())"
            source.namespace[f"{made}_f"] = field.factory
        else:
            value = f"{data}.get({key}, {source.name(field.default, 'default')})"
        if field.to_float:
            value = f"float({value})"
        arguments.append(f"{field.name}={value}")
    return f"{made}({', '.join(arguments)})"


class RecordCodec(Generic[R]):
    """The dict and tuple forms of one record dataclass, compiled once.

    ``context`` names fields left out of the tuple form (the receiving side knows
    them: a page's sitemap URL); ``from_tuple`` takes them after the tuple, in order.
    """

    def __init__(self, cls: type[R], context: tuple[str, ...] = ()) -> None:
        described = _describe(cls)
        self.cls = cls
        self.fields: tuple[str, ...] = tuple(field.name for field in described)
        """Field names in dataclass order (the order of the dict form)."""
        self.nested_fields: frozenset[str] = frozenset(
            field.name for field in described if field.shape in (_RECORD, _RECORD_LIST)
        )
        """Fields holding a record or a list of records."""
        self.conditional_fields: tuple[str, ...] = tuple(field.name for field in described if field.conditional)
        """Fields left out of the dict form while they are None (they come last)."""
        self.context = context
        self.tuple_fields: tuple[str, ...] = tuple(name for name in self.fields if name not in context)
        """Field names of the tuple form, in order."""
        unknown = set(context) - set(self.fields)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {sorted(unknown)}")
        source = _Source()
        conditional = "".join(
            f"    if _o.{name} is not None:\n        _r[{name!r}] = _o.{name}\n" for name in self.conditional_fields
        )
        self.to_dict: Callable[[R], dict[str, Any]] = source.compile(
            "to_dict",
            f"def to_dict(_o):\n    _r = {_out_expr(cls, '_o', 1, as_dict=True)}\n{conditional}    return _r\n",
        )
        """The record as a plain dict in field order (nested dicts, lists copied)."""
        self.from_dict: Callable[[dict[str, Any]], R] = source.compile(
            "from_dict", f"def from_dict(_d):\n    return {_from_dict_expr(cls, '_d', 1, source)}\n"
        )
        """The record of a :attr:`to_dict` dict (missing keys take their defaults)."""
        self.to_tuple: Callable[[R], tuple[Any, ...]] = source.compile(
            "to_tuple", f"def to_tuple(_o):\n    return {_out_expr(cls, '_o', 1, as_dict=False, context=context)}\n"
        )
        """The record as a tuple of plain values (``context`` fields left out)."""
        parameters = "".join(f", _f_{name}" for name in context)
        unpack = "".join(f"_f_{name}, " for name in self.tuple_fields)
        made = _from_tuple_expr(cls, "_t", 1, source, context, unpacked=True)
        self.from_tuple: Callable[..., R] = source.compile(
            "from_tuple", f"def from_tuple(_t{parameters}):\n    {unpack}= _t\n    return {made}\n"
        )
        """The record of a :attr:`to_tuple` tuple (and the ``context`` values)."""

    def __repr__(self) -> str:
        return f"RecordCodec({self.cls.__name__})"
