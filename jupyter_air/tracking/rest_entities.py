"""The entities of the REST tracking client (rest.py): runs, experiments, metrics and raw
answers as MLflow's REST API gives them, with the attributes of MLflow's own entities that
jupyter-air reads (``run.info.run_id``, ``run.data.tags``, ``experiment.lifecycle_stage``…)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunInfo:
    run_id: str
    experiment_id: str
    run_name: str
    status: str
    lifecycle_stage: str
    artifact_uri: str
    start_time: int | None = None
    end_time: int | None = None
    user_id: str = ""

    @property
    def run_uuid(self) -> str:
        return self.run_id


@dataclass(frozen=True)
class Metric:
    key: str
    value: float
    timestamp: int
    step: int = 0

    @classmethod
    def from_json(cls, metric: Mapping[str, Any]) -> Metric:
        return cls(
            key=str(metric["key"]),
            value=float(metric["value"]),
            timestamp=as_int(metric.get("timestamp")) or 0,
            step=as_int(metric.get("step")) or 0,
        )


@dataclass
class RunData:
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class Run:
    info: RunInfo
    data: RunData

    @classmethod
    def from_json(cls, run: Mapping[str, Any]) -> Run:
        info, data = run.get("info") or {}, run.get("data") or {}
        return cls(
            RunInfo(
                run_id=str(info.get("run_id") or info.get("run_uuid") or ""),
                experiment_id=str(info.get("experiment_id") or ""),
                run_name=str(info.get("run_name") or ""),
                status=str(info.get("status") or ""),
                lifecycle_stage=str(info.get("lifecycle_stage") or "active"),
                artifact_uri=str(info.get("artifact_uri") or ""),
                start_time=as_int(info.get("start_time")),
                end_time=as_int(info.get("end_time")),
                user_id=str(info.get("user_id") or ""),
            ),
            RunData(
                tags=pairs(data.get("tags")),
                params=pairs(data.get("params")),
                metrics={
                    str(m["key"]): float(m["value"])
                    for m in data.get("metrics") or []
                    if "key" in m and "value" in m
                },
            ),
        )


@dataclass
class Experiment:
    experiment_id: str
    name: str
    artifact_location: str
    lifecycle_stage: str
    tags: dict[str, str] = field(default_factory=dict)
    creation_time: int | None = None
    last_update_time: int | None = None

    @classmethod
    def from_json(cls, experiment: Mapping[str, Any]) -> Experiment:
        return cls(
            experiment_id=str(experiment.get("experiment_id") or ""),
            name=str(experiment.get("name") or ""),
            artifact_location=str(experiment.get("artifact_location") or ""),
            lifecycle_stage=str(experiment.get("lifecycle_stage") or "active"),
            tags=pairs(experiment.get("tags")),
            creation_time=as_int(experiment.get("creation_time")),
            last_update_time=as_int(experiment.get("last_update_time")),
        )


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]

    @property
    def code(self) -> str:
        return str(self.body.get("error_code") or "")

    @property
    def message(self) -> str:
        return str(self.body.get("message") or "")


def pairs(items: Any) -> dict[str, str]:
    return {str(i["key"]): str(i.get("value", "")) for i in items or [] if "key" in i}


def as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def parse_json(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
