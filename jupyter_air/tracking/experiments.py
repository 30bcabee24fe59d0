"""Which experiment a run goes to, created once and race-free.

The rule (docs/mlflow.md): the experiment made active in this process with
``mlflow.set_experiment``, else ``MLFLOW_EXPERIMENT_NAME`` (or ``MLFLOW_EXPERIMENT_ID``), else
``/Users/{user}/{notebook}``. A missing experiment is created; when several processes create the
same one at once, the losers of the race find the winner's by name, so all of them end up in the
same experiment and none in "Default" (mlflow #4123, #10334, #12259).
"""

from __future__ import annotations

import os
import sys
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .context import KernelContext, kernel_context
from .naming import default_experiment_name
from .rest import tracking_errors

if TYPE_CHECKING:
    from mlflow.entities import Experiment
    from mlflow.tracking import MlflowClient


class ExperimentError(ValueError):
    """An experiment that cannot take runs as asked (deleted, or another artifact location)."""


# MLflow 3's UI opens an experiment in its GenAI view unless told it is model training
TRAINING_EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}


def active_experiment_id() -> str | None:
    """The experiment made active in this process by ``mlflow.set_experiment``, if any.

    MLflow 3.x keeps it in ``mlflow.tracking.fluent._active_experiment_id`` (it also exports it
    as ``MLFLOW_EXPERIMENT_ID`` for subprocesses). Read without importing mlflow: if mlflow was
    never imported, nothing was set."""
    fluent = sys.modules.get("mlflow.tracking.fluent")
    value = getattr(fluent, "_active_experiment_id", None) if fluent else None
    return str(value) if value else None


def resolve_experiment(
    name: str | None = None,
    *,
    artifact_location: str | None = None,
    client: MlflowClient | None = None,
    context: KernelContext | None = None,
    environ: Mapping[str, str] | None = None,
) -> Experiment:
    """The experiment a new run goes to, created if missing.

    ``name`` given (a workload's ``experiment_name``) wins; else the rule above.
    ``artifact_location`` applies when the experiment is created, and must match when it exists.
    """
    client = client or _client()
    env = os.environ if environ is None else environ
    if name:
        return get_or_create_experiment(name, artifact_location=artifact_location, client=client)
    experiment_id = active_experiment_id()
    if experiment_id is None:
        env_name = env.get("MLFLOW_EXPERIMENT_NAME")
        if env_name:
            return get_or_create_experiment(
                env_name, artifact_location=artifact_location, client=client
            )
        experiment_id = env.get("MLFLOW_EXPERIMENT_ID") or None
    if experiment_id is not None:
        experiment = _get_by_id(client, experiment_id)
        _check_usable(experiment, artifact_location)
        return experiment
    context = context or kernel_context(env)
    return get_or_create_experiment(
        default_experiment_name(context.notebook_path, context.user),
        artifact_location=artifact_location,
        client=client,
    )


def get_or_create_experiment(
    name: str,
    *,
    artifact_location: str | None = None,
    client: MlflowClient | None = None,
) -> Experiment:
    """The experiment called ``name``; created if missing, by one process only when several try
    at once (the others get the same one)."""
    client = client or _client()
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            experiment_id = client.create_experiment(
                name, artifact_location=artifact_location, tags=TRAINING_EXPERIMENT_TAGS
            )
        except tracking_errors() as error:
            if getattr(error, "error_code", None) != "RESOURCE_ALREADY_EXISTS":
                raise
            experiment = client.get_experiment_by_name(name)  # another process created it
            if experiment is None:  # created then deleted for good in between: very unlikely
                raise
        else:
            return client.get_experiment(experiment_id)
    _check_usable(experiment, artifact_location)
    return experiment


def check_experiment(
    name: str, *, artifact_location: str | None = None, client: MlflowClient | None = None
) -> Experiment | None:
    """The experiment called ``name`` if it exists, checked as ``get_or_create_experiment``
    checks it (active, the same artifact location); None if it would be created. Creates
    nothing."""
    client = client or _client()
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        _check_usable(experiment, artifact_location)
    return experiment


def _get_by_id(client: MlflowClient, experiment_id: str) -> Experiment:
    try:
        return client.get_experiment(experiment_id)
    except tracking_errors() as error:
        said = getattr(error, "message", error)
        raise ExperimentError(
            f"Experiment {experiment_id} (MLFLOW_EXPERIMENT_ID or mlflow.set_experiment) does "
            f"not exist on the tracking server {client.tracking_uri}: {said}"
        ) from error


def _check_usable(experiment: Experiment, artifact_location: str | None) -> None:
    if experiment.lifecycle_stage != "active":
        raise ExperimentError(
            f"Experiment {experiment.name!r} (id {experiment.experiment_id}) is deleted. "
            "Restore it in the MLflow UI, or use another experiment name "
            "(mlflow.set_experiment or MLFLOW_EXPERIMENT_NAME)."
        )
    if artifact_location and not same_location(artifact_location, experiment.artifact_location):
        raise ExperimentError(
            f"Experiment {experiment.name!r} already exists with artifact location "
            f"{experiment.artifact_location!r}, not {artifact_location!r}. An experiment's "
            "artifact location cannot change: use another experiment name, or leave the "
            "artifact location out to use the existing one."
        )


def same_location(a: str, b: str | None) -> bool:
    """Whether two artifact locations name the same place (a local path equals its file URI)."""
    return _normalized_location(a) == _normalized_location(b or "")


def _normalized_location(location: str) -> str:
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme in ("", "file") and location:
        path = urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else location
        return Path(path).expanduser().resolve().as_uri()
    return location.rstrip("/")


def _client() -> MlflowClient:
    from mlflow.tracking import MlflowClient

    return MlflowClient()
