"""Markers shared by adapters."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])

WRITE_METHOD_ATTRIBUTE = "__resolveflow_writes__"


def writes(method: F) -> F:
    """Mark a protocol method that changes an outside system.

    The layering check (scripts/check_layers.py) collects every method marked this way and fails
    the build when code outside ``resolveflow.execution`` calls one of them.
    """
    setattr(method, WRITE_METHOD_ATTRIBUTE, True)
    return method
