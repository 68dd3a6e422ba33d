"""What adapters share: the @writes marker, and ``Call``, the description of one REST call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., object])

WRITE_METHOD_ATTRIBUTE = "__resolveflow_writes__"


def writes(method: F) -> F:
    """Mark a protocol method that changes an outside system.

    The layering check (scripts/check_layers.py) collects every method marked this way and fails
    the build when code outside ``resolveflow.gate`` calls one of them.
    """
    setattr(method, WRITE_METHOD_ATTRIBUTE, True)
    return method


@dataclass(frozen=True)
class Call:
    """One REST call, for messages, logs and error context (never holds the token)."""

    operation: str
    method: str
    path: str
    write: bool
    system: str = ""  # named first in messages when it is not GitHub, e.g. "gitlab"

    def __str__(self) -> str:
        """``get_issue (GET /repos/acme/widgets/issues/7)``: what every message starts with."""
        name = f"{self.system} {self.operation}" if self.system else self.operation
        return f"{name} ({self.method} {self.path})"

    @property
    def maybe_written(self) -> str:
        """The clause outcome-unknown messages end with; a read has nothing to apply."""
        return "; a write may have been applied." if self.write else "."

    def context(self) -> dict[str, Any]:
        return {"operation": self.operation, "method": self.method, "path": self.path}
