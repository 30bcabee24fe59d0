"""What `air` prints: `air explain FIELD` / `air run -h FIELD` from the spec's own schema, the
generated field reference in docs/workloads.md (current), every table and line within an
80-column terminal, and `--output json` on every command that prints data — through the real
CLI against a real tracking server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from workloads_support import PY, air, wait_for, write

from jupyter_air.workloads.fields import DOCS_END, DOCS_START, all_fields, with_reference
from jupyter_air.workloads.spec import WorkloadSpec

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "workloads.md"


# air explain ---------------------------------------------------------------------------------
def test_explain_prints_a_fields_schema(tmp_path):
    shown = air("explain", "compute.accelerator_type")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:4] == [
        "compute.accelerator_type",
        "  type:    string",
        "  default: GPU",
        "  allowed: GPU, CPU, or a GPU model name such as H100 or A100",
    ]
    assert "matched against the device names NVML reports" in shown.stdout
    assert air("run", "-h", "compute.accelerator_type").stdout == shown.stdout
    assert air("explain", "accelerator_type").stdout == shown.stdout  # a unique last part

    retries = json.loads(air("explain", "max_retries", "-o", "json").stdout)
    assert retries["type"] == "integer" and retries["default"] == "0"
    assert retries["limits"] == "0 to 100" and not retries["required"]
    assert "Attempts after the first one that fails" in retries["help"]
    nodes = air("run", "-h", "compute.num_nodes", "--output", "json")
    assert json.loads(nodes.stdout)["limits"] == "1 to 256"
    code = json.loads(air("explain", "code_source", "-o", "json").stdout)
    assert code["allowed"] == "snapshot, live"
    assert code["default"] == "snapshot"
    assert json.loads(air("explain", "command", "-o", "json").stdout)["required"] is True

    # every field of the model, nested ones too
    listed = json.loads(air("explain", "-o", "json").stdout)
    paths = [f["path"] for f in listed]
    assert paths == [f.path for f in all_fields()]
    assert set(WorkloadSpec.model_fields) <= set(paths) and "compute.backend" in paths
    assert all(f["help"] for f in listed)  # every field has a description

    # the command's own help stays the command's help, with a file after -h too
    spec = write(tmp_path, "w.yaml", "experiment_name: e\ncommand: x\n")
    for args in (["run", "-h"], ["run", "-h", str(spec)]):
        helped = air(*args)
        assert helped.returncode == 0 and helped.stdout.startswith("usage: air run")


def test_an_unknown_field_names_the_nearest_ones():
    typo = air("explain", "compute.num_acelerators")
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.strip().endswith(
        "air: 'compute.num_acelerators' is not a field of the workload YAML; did you mean "
        "'compute.num_accelerators'?"
    )
    bare = air("run", "-h", "acelerator_type")
    assert bare.returncode == 2
    assert "did you mean 'compute.accelerator_type'" in bare.stderr
    nothing = air("explain", "zzz")
    assert nothing.returncode == 2 and "`air explain` lists every field" in nothing.stderr


def test_the_field_reference_in_the_docs_is_current():
    text = DOC.read_text(encoding="utf-8")
    assert text == with_reference(text), "docs/workloads.md: run python scripts/field_reference.py"
    reference = text[text.index(DOCS_START) : text.index(DOCS_END)]
    for field in all_fields():
        assert f"| `{field.path}` |" in reference
    check = subprocess.run(
        [sys.executable, "scripts/field_reference.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    stale = with_reference(text.replace("| `max_retries` |", "| `max_retry` |"))
    assert stale == text  # the generated part is rewritten whole


# 80 columns ----------------------------------------------------------------------------------
FAILING = "import sys; print('a line'); sys.exit('a reason: ' + 'x' * 150)"


def _fits(result: subprocess.CompletedProcess, *, logs: bool = False) -> None:
    """Every line within 80 columns — but the log lines themselves (``logs``: on stdout),
    which are the command's own output, printed whole, and a path or a link longer than what
    is left of its line (never cut: it must stay whole to be copied; the test's own folder is
    such a path)."""
    assert result.returncode in (0, 1), result.stderr
    for line in ("" if logs else result.stdout).splitlines() + result.stderr.splitlines():
        if "UserWarning" in line or line.startswith("  from jupyter_air"):
            continue  # Python's own warning about an uninstalled checkout
        last = line.split()[-1] if line.split() else ""
        if (last.startswith("/") or "://" in last) and len(line) - len(last) < 80:
            continue
        assert len(line) <= 80, f"{len(line)} columns: {line!r}"


def test_every_table_fits_80_columns(env):
    long = "an-experiment-with-a-rather-long-name-" + "x" * 40
    spec = write(
        env.tmp,
        "w.yaml",
        f"experiment_name: {long}\nmlflow_run_name: {'a-run-name-that-goes-on-' * 4}\n"
        "compute: {accelerator_type: CPU}\nmax_retries: 1\n"
        f"command: {json.dumps([PY, '-c', FAILING])}\n"
        "env_variables: {A_RATHER_LONG_NAME: a-rather-long-value-too, ANOTHER_ONE: and-more}\n",
    )
    submitted = air("run", str(spec), "-o", "json")
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["id"]
    job = wait_for(env.store, job_id)
    assert job.status == "FAILED" and len(job.attempts) == 2

    runs = air("list", "runs", "--all-status", columns=80)
    _fits(runs)
    header, row = runs.stdout.splitlines()[:2]
    assert header.startswith("ID            STATUS  ")
    assert row.startswith(f"{job_id}  FAILED  ") and "…" in row  # the id whole, names cut
    assert len(air("list", "runs", "--all-status").stdout.splitlines()[1]) > 80  # not a terminal
    _fits(air("list", "runs", "--all-status", "--all-users", columns=80))

    shown = air("get", "run", job_id, columns=80)
    _fits(shown)
    attempts = shown.stdout.split("\nAttempts\n")[1].split("\n\n")[0].splitlines()
    assert job.attempts[0].mlflow_run_id in attempts[1]  # the run id whole
    assert job.attempts[1].mlflow_run_id in attempts[2]
    _fits(air("logs", job_id, "--attempt", "1", columns=80), logs=True)
    _fits(air("run", str(spec), "--dry-run", columns=80))
    _fits(air("explain", "env_variables", columns=80))
    _fits(air("explain", columns=80))
    watched = air("run", str(spec), "--watch", columns=80)
    _fits(watched, logs=True)
    assert "a reason: " + "x" * 150 in watched.stdout  # a log line is not cut
    assert "── attempt 2 of 2 ──" in watched.stderr
    _fits(air("cancel", job_id, columns=80))
    _fits(air("--help", columns=80))
    _fits(air("run", "--help", columns=80))


def test_every_command_that_prints_data_takes_output_json(env):
    spec = write(
        env.tmp,
        "w.yaml",
        "experiment_name: json-out\ncompute: {accelerator_type: CPU}\n"
        f"command: {PY} -c 'print(1)'\n",
    )
    job_id = json.loads(air("run", str(spec), "-o", "json").stdout)["id"]
    wait_for(env.store, job_id)
    outputs = {
        "run --dry-run": air("run", str(spec), "--dry-run", "-o", "json"),
        "list runs": air("list", "runs", "--all-status", "-o", "json"),
        "get run": air("get", "run", job_id, "-o", "json"),
        "cancel": air("cancel", job_id, "-o", "json"),
        "explain": air("explain", "max_retries", "-o", "json"),
    }
    tokens = ("--data-dir", str(env.tmp), "-o", "json")
    outputs["agent-token"] = air("agent-token", "node-1", *tokens)
    outputs["agent-token --list"] = air("agent-token", "--list", *tokens)
    for name, result in outputs.items():
        assert result.returncode == 0, (name, result.stderr)
        json.loads(result.stdout)
    logs = air("logs", job_id, "-o", "json")
    assert [json.loads(line)["text"] for line in logs.stdout.splitlines()] == ["1"]
    assert json.loads(outputs["agent-token --list"].stdout) == {"nodes": ["node-1"]}
    assert json.loads(outputs["cancel"].stdout)["status"] == "SUCCEEDED"


def test_control_characters_in_records_are_printed_as_escapes(env):
    """A name written before names were checked (or by anything else that reaches the store)
    cannot act on the terminal: `air` prints its control characters as escapes."""
    from jupyter_air.tracking.naming import current_user
    from jupyter_air.workloads.paths import new_job_id

    hostile = "runs\x1b]0;owned\x07\x1b[2J\x9b"
    job_id = new_job_id()
    env.store.create_job(
        id=job_id, experiment_name=hostile, run_name=hostile + "-run", command="echo \x1b[31m",
        compute={"num_accelerators": 1, "accelerator_type": "CPU", "num_nodes": 1},
        max_retries=0, spec={}, user=current_user(),
    )  # fmt: skip
    env.store.finish_job(job_id, "FAILED", "the reason \x07 rang")
    escaped = "runs\\x1b]0;owned\\x07\\x1b[2J\\x9b"
    for columns in (None, 200):
        listed = air("list", "runs", "--all-status", "--all-users", columns=columns)
        assert listed.returncode == 0, listed.stderr
        shown = air("get", "run", job_id, columns=columns)
        assert shown.returncode == 0, shown.stderr
        for output in (listed.stdout, shown.stdout):
            assert not any(c in output for c in "\x1b\x07\x9b"), output
        assert escaped in shown.stdout and "echo \\x1b[31m" in shown.stdout
        assert "the reason \\x07 rang" in shown.stdout
        assert "runs\\x1b" in listed.stdout
    # scripts get the record as it is, in JSON (which escapes it)
    record = json.loads(air("get", "run", job_id, "-o", "json").stdout)
    assert record["experiment_name"] == hostile
