"""Settings: every ``JUPYTER_AIR_*`` variable is read in one place (jupyter_air/config.py), the
same way everywhere, and docs/configuration.md lists exactly those."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from jupyter_air import config

ROOT = Path(__file__).resolve().parents[1]


def test_the_configuration_doc_lists_every_setting_as_the_code_has_it():
    doc = (ROOT / "docs" / "configuration.md").read_text()
    assert config.reference() in doc, "run: python -m jupyter_air.config (docs/configuration.md)"
    for setting in config.SETTINGS:
        assert f"`{setting.name}`" in doc


def test_no_module_but_config_names_a_variable_in_its_code():
    """A variable named in code anywhere else would be read by a rule of its own; docstrings,
    comments and the public ``distributed`` docstring may name them for people."""
    named = re.compile(r"[\"']JUPYTER_AIR_[A-Z0-9_]+[\"']")
    found = []
    for path in (ROOT / "jupyter_air").rglob("*.py"):
        if path.name == "config.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if named.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
    names = {s.name for s in config.SETTINGS}
    assert len(names) == len(config.SETTINGS)


def test_a_number_that_cannot_be_read_is_one_warning_and_the_default(caplog):
    env = {config.KEEP_NODES_S.name: "soon"}
    with caplog.at_level(logging.WARNING, logger="jupyter_air.config"):
        assert config.KEEP_NODES_S.get(env) == 60.0
    assert [r.getMessage() for r in caplog.records] == [
        "jupyter-air: JUPYTER_AIR_KEEP_NODES_S='soon' is not a number of seconds; using 60"
    ]
    assert config.RAY_LOST_S.get({config.RAY_LOST_S.name: "nan"}) == 60.0
    assert config.SYSTEM_METRICS_INTERVAL_S.number({}) is None


def test_numbers_are_kept_within_their_range_and_blank_is_unset():
    keep = config.KEEP_NODES_S
    assert keep.get({keep.name: "90000"}) == 3600.0
    assert keep.get({keep.name: "-5"}) == 0.0
    assert keep.get({keep.name: " 12.5 "}) == 12.5
    assert keep.get({keep.name: "  "}) == 60.0
    assert config.LOG_UPLOAD_INTERVAL_S.get({config.LOG_UPLOAD_INTERVAL_S.name: "0"}) == 1.0
    assert config.CLUSTER.text({config.CLUSTER.name: "  "}) is None
    assert config.CLUSTER.text({config.CLUSTER.name: " ray "}) == "ray"


def test_the_environment_is_read_at_each_call_not_at_import(monkeypatch):
    monkeypatch.setenv(config.RAY_PLACEMENT_TIMEOUT_S.name, "7")
    assert config.RAY_PLACEMENT_TIMEOUT_S.get() == 7.0
    monkeypatch.delenv(config.RAY_PLACEMENT_TIMEOUT_S.name)
    assert config.RAY_PLACEMENT_TIMEOUT_S.get() == 60.0
