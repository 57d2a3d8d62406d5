"""``@client.tool("payments.refund")``: a typed Python signature that calls a
tool through the executor.

**The decorated function's body is never run.** It declares a remote tool
(the executor calls it, at most once per key); it does not make a local
function idempotent, as AWS Powertools' ``@idempotent`` does. A body that
holds more than a docstring, ``...`` or ``pass`` draws a warning at
decoration. The signature says which arguments the tool takes (they are
checked and sent as the ``args`` map), and the docstring is the tool's
description, for frameworks that read it (``__doc__``, ``description``,
``input_schema``). Calling the result sends the call and returns the
:class:`~toolexec.Result`.

The idempotency key comes from, in order: ``.using(key=...)``,
``.using(step=...)``, ``.using(state=...)`` (the state field
``{name}_idempotency_key``, see :mod:`toolexec.keys`), or the journal step
whose ``with`` block is running. With none of them the call raises
:class:`~toolexec.MissingKey`: a key made up at the call would be a new key
on every retry.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing
import warnings
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, Generic, Literal, ParamSpec, Protocol, Union

from . import keys as _keys
from .errors import InvalidRequest
from .journal import Step
from .result import Result

P = ParamSpec("P")


class _Caller(Protocol):
    def __call__(self, tool: str, *, key: str | None, args: dict[str, Any], tenant: str | None,
                 wait: float | timedelta | None, step: Step | None) -> Any: ...


class _Spec:
    """What a decorated signature says: parameter names, types, schema."""

    def __init__(self, name: str, fn: Callable[..., Any], description: str | None) -> None:
        self.name = name
        self.fn = fn
        self.sig = inspect.signature(fn)
        for p in self.sig.parameters.values():
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                raise InvalidRequest(f"tool {name}: *{p.name} has no name to send; use named parameters")
        try:
            self.hints = typing.get_type_hints(fn)
        except Exception as e:  # noqa: BLE001 - an unresolvable annotation
            raise InvalidRequest(f"tool {name}: cannot read the annotations of {fn.__qualname__}: {e}") from None
        self.description = description if description is not None else inspect.getdoc(fn) or ""
        self.input_schema = _schema(self.sig, self.hints)
        if _has_body(fn):
            warnings.warn(f"@client.tool({name!r}): the body of {fn.__qualname__} is never run; the executor calls "
                          f"the tool {name!r}. Leave only a docstring (the tool's description) or ...; code that "
                          f"must run around the call belongs in a function that calls this one",
                          UserWarning, stacklevel=3)

    def args(self, a: tuple[Any, ...], kw: Mapping[str, Any]) -> dict[str, Any]:
        try:
            bound = self.sig.bind(*a, **kw)
        except TypeError as e:
            raise InvalidRequest(f"tool {self.name}: {e}") from None
        bound.apply_defaults()
        out: dict[str, Any] = {}
        for pname, value in bound.arguments.items():
            p = self.sig.parameters[pname]
            if p.kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
                continue
            _check_type(self.name, pname, value, self.hints.get(pname))
            out[pname] = value
        return out


def _has_body(fn: Callable[..., Any]) -> bool:
    """Whether fn's body holds more than a docstring, ``...`` and ``pass``.
    False when its source cannot be read (a REPL, a lambda, a builtin)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any(not _is_placeholder(stmt) for stmt in node.body)


def _is_placeholder(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass):
        return True
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and (isinstance(stmt.value.value, str) or stmt.value.value is Ellipsis))


class _KeySource:
    def __init__(self, key: str | None, step: Step | None, state: Any, state_name: str | None) -> None:
        self.key, self.step, self.state, self.state_name = key, step, state, state_name

    def resolve(self, default_name: str) -> tuple[str | None, Step | None]:
        if self.key is not None:
            return self.key, None
        if self.step is not None:
            return None, self.step
        if self.state is not None:
            return _keys.from_state(self.state, self.state_name or default_name), None
        return None, None  # the running journal step, or MissingKey


class _Base:
    def __init__(self, caller: _Caller, spec: _Spec) -> None:
        self._caller = caller
        self._spec = spec
        self.name = spec.name
        self.description = spec.description
        self.input_schema = spec.input_schema
        self.__doc__ = spec.description
        self.__name__ = spec.fn.__name__
        self.__qualname__ = spec.fn.__qualname__
        self.__wrapped__ = spec.fn
        self.__signature__ = spec.sig

    def _send(self, ks: _KeySource, tenant: str | None, wait: float | timedelta | None,
              a: tuple[Any, ...], kw: Mapping[str, Any]) -> Any:
        key, step = ks.resolve(self._spec.fn.__name__)
        return self._caller(self.name, key=key, args=self._spec.args(a, kw), tenant=tenant, wait=wait, step=step)

    def __repr__(self) -> str:
        return f"<toolexec tool {self.name} {self._spec.sig}>"


class Tool(_Base, Generic[P]):
    """A decorated tool of a :class:`~toolexec.Client`; see the module doc."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Result:
        res: Result = self._send(_KeySource(None, None, None, None), None, None, args, kwargs)
        return res

    def using(self, *, key: str | None = None, step: Step | None = None, state: Any = None,
              state_name: str | None = None, tenant: str | None = None,
              wait: float | timedelta | None = None) -> Callable[P, Result]:
        """The tool with its key (and tenant, wait) chosen: ``key``, the
        journal ``step``'s key, or the key stored in agent ``state`` under
        ``{state_name}_idempotency_key`` (``state_name`` defaults to the
        function's name). The state key is only read, never created here."""
        ks = _KeySource(key, step, state, state_name)

        def call(*args: P.args, **kwargs: P.kwargs) -> Result:
            res: Result = self._send(ks, tenant, wait, args, kwargs)
            return res

        return call


class AsyncTool(_Base, Generic[P]):
    """A decorated tool of an :class:`~toolexec.AsyncClient`."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[Result]:
        aw: Awaitable[Result] = self._send(_KeySource(None, None, None, None), None, None, args, kwargs)
        return aw

    def using(self, *, key: str | None = None, step: Step | None = None, state: Any = None,
              state_name: str | None = None, tenant: str | None = None,
              wait: float | timedelta | None = None) -> Callable[P, Awaitable[Result]]:
        """As :meth:`Tool.using`."""
        ks = _KeySource(key, step, state, state_name)

        def call(*args: P.args, **kwargs: P.kwargs) -> Awaitable[Result]:
            aw: Awaitable[Result] = self._send(ks, tenant, wait, args, kwargs)
            return aw

        return call


# ---------------------------------------------------------------- type checks


_JSON_TYPES: dict[Any, tuple[str, tuple[type, ...]]] = {
    str: ("string", (str,)),
    int: ("integer", (int,)),
    float: ("number", (int, float)),
    bool: ("boolean", (bool,)),
    bytes: ("string", (bytes,)),
    list: ("array", (list, tuple)),
    dict: ("object", (dict, Mapping)),
}


def _check_type(tool: str, pname: str, value: Any, hint: Any) -> None:
    """A light check of values against simple annotations (str, int,
    float, bool, list, dict, Optional, Literal); other annotations are not
    checked here (the gateway checks the tool's input schema)."""
    if hint is None or hint is Any:
        return
    if not _matches(value, hint):
        raise InvalidRequest(f"tool {tool}: {pname}={value!r} is not {_hint_name(hint)}")


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_matches(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is Literal:
        return value in typing.get_args(hint)
    base = origin if origin is not None else hint
    spec = _JSON_TYPES.get(base)
    if spec is None:
        return True
    if isinstance(value, bool) and base is not bool:
        return False  # True is an int in Python, not in JSON
    return isinstance(value, spec[1])


def _hint_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint)


def _schema(sig: inspect.Signature, hints: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema of the parameters, from their annotations."""
    props: dict[str, Any] = {}
    required: list[str] = []
    extra = False
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            extra = True
            continue
        props[p.name] = _type_schema(hints.get(p.name))
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": extra}
    if required:
        out["required"] = required
    return out


def _type_schema(hint: Any) -> dict[str, Any]:
    if hint is None or hint is Any:
        return {}
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_type_schema(h) for h in typing.get_args(hint)]}
    if hint is type(None):
        return {"type": "null"}
    if origin is Literal:
        return {"enum": list(typing.get_args(hint))}
    base = origin if origin is not None else hint
    spec = _JSON_TYPES.get(base)
    if spec is None:
        return {}
    out: dict[str, Any] = {"type": spec[0]}
    args = typing.get_args(hint)
    if base is list and args:
        out["items"] = _type_schema(args[0])
    return out
