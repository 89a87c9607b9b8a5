"""The fields each workload adds to the schema, found in the registry (services/workloads/,
``Workload.graphql_options_input``, ``graphql_result`` and ``graphql_queries``): its
options' input type as a field of submitEvaluation's input, its outcome's type as a field
of Run, its queries as fields of Query. The types live in the workload's folder; nothing
here names a kind."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import strawberry

from services.api.context import ApiDeps, in_thread
from services.core.workload import GENERIC_OPTIONS_FIELD, QueryKit, Workload, entry
from services.workloads import workloads

T = TypeVar("T")


def _attribute(graphql_name: str) -> str:
    """The Python attribute strawberry serves as ``graphql_name`` (it camel-cases them)."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", graphql_name).lower()


@functools.cache
def option_inputs() -> tuple[tuple[Workload, str, type], ...]:
    """(workload, its input's attribute, the strawberry input) for each workload that
    declares one, by name."""
    found = []
    for workload in sorted(workloads().values(), key=lambda w: w.name):
        if workload.graphql_options_input is None:
            continue
        if workload.options_field == GENERIC_OPTIONS_FIELD:
            raise ValueError(
                f"workload {workload.name!r}: a typed options input needs an options_field "
                f"of its own; {GENERIC_OPTIONS_FIELD!r} is the JSON one every workload shares"
            )
        found.append((workload, _attribute(workload.options_field), _class(workload, "input")))
    return tuple(found)


@functools.cache
def results() -> tuple[tuple[str, type], ...]:
    """(Run's field, the strawberry type) for each workload that declares a result type:
    the field is named after the workload."""
    found = []
    for workload in sorted(workloads().values(), key=lambda w: w.name):
        if workload.graphql_result is None:
            continue
        if not workload.name.isidentifier():
            raise ValueError(
                f"workload {workload.name!r}: its result type is Run's field of its name, "
                "which must then be an identifier (letters, digits, _)"
            )
        found.append((workload.name, _class(workload, "result")))
    return tuple(found)


def _class(workload: Workload, which: str) -> type:
    path = workload.graphql_options_input if which == "input" else workload.graphql_result
    found = entry(str(path))
    if not isinstance(found, type):
        raise TypeError(f"workload {workload.name!r}: its GraphQL {which} {path} is not a class")
    return found


def with_option_inputs(cls: type[T]) -> type[T]:
    """``cls``, submitEvaluation's input before strawberry reads it, with each workload's
    options input as an optional field (null: not that kind) before its ``workload``."""
    fields = {attribute: input_type | None for _, attribute, input_type in option_inputs()}
    _insert(cls, fields, before="workload")
    for attribute in fields:
        setattr(cls, attribute, None)
    return cls


def options_given(data: object) -> list[tuple[str, Any]]:
    """(workload name, its options as a dict) for each typed options input ``data`` holds."""
    given = [(workload, getattr(data, attribute)) for workload, attribute, _ in option_inputs()]
    return [(workload.name, vars(value)) for workload, value in given if value is not None]


def with_results(cls: type[T]) -> type[T]:
    """``cls``, the Run type before strawberry reads it, with each workload's result type
    as a nullable field (null: a run of another kind) before its ``log_keys``."""
    _insert(cls, {field: result | None for field, result in results()}, before="log_keys")
    return cls


def results_of(report: dict[str, Any]) -> dict[str, Any]:
    """Run's workload fields for a stored report: each result type's ``from_report``."""
    return {field: result.from_report(report) for field, result in results()}  # type: ignore[attr-defined]


def _insert(cls: type, fields: dict[str, Any], before: str) -> None:
    """Add ``fields`` to the class's annotations just before ``before``'s, keeping the
    schema's field order (and so its printed SDL) what it was when they were written in."""
    annotations: dict[str, Any] = {}
    for name, annotation in cls.__annotations__.items():
        if name == before:
            annotations.update(fields)
        annotations[name] = annotation
    if before not in annotations:
        raise ValueError(f"{cls.__name__} has no field {before!r} to place the workloads' before")
    cls.__annotations__ = annotations


def workload_queries() -> list[type]:
    """Each workload's Query fields (a strawberry type), by name, reading through the kit."""
    kit = QueryKit(read=_read)
    declared = sorted(workloads().values(), key=lambda w: w.name)
    return [entry(w.graphql_queries)(kit) for w in declared if w.graphql_queries]


async def _read(info: strawberry.Info, fn: Callable[..., T], *args: Any) -> T:
    """QueryKit.read: a signed-in caller, then ``fn(session, *args)`` off the event loop."""
    info.context.require_user()
    return await in_thread(_in_read_session, info.context.deps, fn, *args)


def _in_read_session(deps: ApiDeps, fn: Callable[..., T], *args: Any) -> T:
    with deps.read_db() as session:
        return fn(session, *args)
