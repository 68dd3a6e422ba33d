"""The model error tree: every way a model call can fail to give a usable answer, under
``Unavailable`` (each product fails closed on one: an escalation, an abstention, a draft without a
model), and the one check of a model's structured answer against its schema."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from resolveflow.errors import Unavailable


class ModelError(Unavailable):
    """The language model did not give a usable answer."""

    outcome = "error"


class ModelRefused(ModelError):
    """The language model refused to answer."""

    outcome = "refused"


class ModelOutputInvalid(ModelError):
    """The language model's answer did not match the schema."""

    outcome = "invalid_output"


SchemaT = TypeVar("SchemaT", bound=BaseModel)


def parse_model_output(schema: type[SchemaT], data: object, what: str) -> SchemaT:
    """``data`` as ``schema``, or ``ModelOutputInvalid`` naming the first place it differs
    (``what``: "the answer", "the judgements", ...)."""
    if isinstance(data, schema):
        return data
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ModelOutputInvalid(
            f"{what} does not match the schema at {where}: {first['msg']}"
        ) from None


class ModelTimeout(ModelError):
    """The language model did not answer in time."""

    outcome = "timeout"


class ModelUnavailable(ModelError):
    """The language model could not be reached or kept failing (rate limit, 5xx)."""

    outcome = "unavailable"
