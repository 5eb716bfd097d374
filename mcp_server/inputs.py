"""Each MCP tool's inputs are its route's: types, bounds, enums and defaults come from the API's own declarations
(the request models in api/*schemas.py, the query and path parameter types the routes use), never restated here.

A tool names the fields it offers and says, for the agent, what each is for; `inputs` turns that into the tool
function's signature, from which the MCP SDK builds the JSON schema it lists and validates calls with. So a route
that changes a bound changes the tool with it (tests/e2e/test_mcp_tools.py compares the two schemas).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, create_model

F = TypeVar("F", bound=Callable[..., Any])
REQUIRED = inspect.Parameter.empty


def _field(model: type[BaseModel], name: str) -> tuple[Any, Any]:
    """(type with its constraints, default or REQUIRED) of one of the model's fields."""
    info = model.model_fields[name]
    kind = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return kind, REQUIRED if info.is_required() else info.get_default(call_default_factory=True)


def _described(kind: Any, description: str) -> Any:
    return Annotated[kind, Field(description=description)]


def _resolve(name: str, models: tuple[type[BaseModel], ...], params: Mapping[str, Any]) -> tuple[Any, Any]:
    if name in params:
        given = params[name]
        return given if isinstance(given, tuple) else (given, REQUIRED)
    for model in models:
        if name in model.model_fields:
            return _field(model, name)
    raise KeyError(f"{name} is neither a route parameter given nor a field of {[m.__name__ for m in models]}")


def inputs(described: Mapping[str, str], *models: type[BaseModel], **params: Any) -> Callable[[F], F]:
    """The tool takes the inputs named in `described` (in that order), each with its description: a field of the
    first of `models` (the route's body) that has it, or a route parameter given in `params` as its type (required)
    or (type, default). The tool function is `async def tool(ctx: Context, **args)`; it gets them as `args`."""
    def give(fn: F) -> F:
        ctx = next(iter(inspect.signature(fn).parameters.values()))
        derived = [ctx.replace(kind=inspect.Parameter.KEYWORD_ONLY)]
        for name, description in described.items():
            kind, default = _resolve(name, models, params)
            derived.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                             annotation=_described(kind, description)))
        fn.__signature__ = inspect.Signature(derived, return_annotation=dict[str, Any])  # type: ignore[attr-defined]  # what inspect reads
        return fn
    return give


def part_of(model: type[BaseModel], title: str, described: Mapping[str, str]) -> type[BaseModel]:
    """A model of some of `model`'s fields (an item of a list the route takes), each described for the agent."""
    fields: dict[str, Any] = {}
    for name, description in described.items():
        kind, default = _field(model, name)
        fields[name] = (_described(kind, description), ... if default is REQUIRED else default)
    return create_model(title, **fields)


__all__ = ["inputs", "part_of"]
