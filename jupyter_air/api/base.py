"""The base of every REST payload model: what a model of an answer promises its clients."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ApiModel(BaseModel):
    """An answer of the REST API. Strict about its own shape (an unknown field is an error, so a
    handler cannot send what the contract does not list), finite numbers only (answers are
    strict JSON), and every field present in what is served: a field with a default is still
    required in the schema of an answer (null when there is nothing to say)."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_serialization_defaults_required=True,
        use_enum_values=True,
    )
