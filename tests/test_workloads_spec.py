"""The workload YAML: valid files load with their defaults and resolved paths; every kind of
mistake is reported with its field and line (all at once), unknown fields with the nearest name,
YAML syntax errors with line and column."""

from __future__ import annotations

import pytest

from jupyter_air.workloads.spec import SpecError
from jupyter_air.workloads.spec_loading import load_spec, load_spec_file

EXAMPLE = """\
experiment_name: my-training          # required: created, or runs appended to it
mlflow_run_name: baseline-lr3e5       # optional, defaults to experiment_name
mlflow_artifact_location: ./artifacts/my-training
compute:
  num_accelerators: 2
  accelerator_type: GPU               # or a GPU model; CPU where there is none
command: torchrun --nproc_per_node=2 train.py
max_retries: 2
"""


def problems(text: str, **kwargs) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_spec(text, **kwargs)
    return [str(p) for p in info.value.problems]


def test_the_issue_example_loads(tmp_path):
    spec = load_spec(EXAMPLE, base_dir=tmp_path)
    assert spec.experiment_name == "my-training"
    assert spec.run_name == "baseline-lr3e5"
    assert spec.compute.num_accelerators == 2
    assert spec.compute.accelerator_type == "GPU"
    assert spec.compute.num_nodes == 1
    assert spec.command == "torchrun --nproc_per_node=2 train.py"
    assert spec.max_retries == 2
    assert spec.mlflow_artifact_location == str(tmp_path / "artifacts" / "my-training")
    assert spec.working_dir == str(tmp_path)
    assert spec.timeout_minutes is None
    assert spec.env_variables == {}


def test_defaults_and_the_other_fields(tmp_path):
    (tmp_path / "src").mkdir()
    spec = load_spec(
        "experiment_name: e\n"
        "command: [python, train.py, --lr, '3e-5']\n"
        "compute: {accelerator_type: h100, num_nodes: 2}\n"
        "timeout_minutes: 1.5\n"
        "working_dir: src\n"
        "mlflow_artifact_location: s3://bucket/x\n"
        "env_variables: {LR: 3e-5, STEPS: 10, DEBUG: true}\n",
        base_dir=tmp_path,
    )
    assert spec.run_name == "e"  # defaults to the experiment's name
    assert spec.command == ["python", "train.py", "--lr", "3e-5"]
    assert spec.command_text() == "python train.py --lr 3e-5"
    assert spec.compute.accelerator_type == "h100"
    assert spec.compute.num_accelerators == 1
    assert spec.compute.num_nodes == 2
    assert spec.timeout_minutes == 1.5
    assert spec.working_dir == str(tmp_path / "src")
    assert spec.mlflow_artifact_location == "s3://bucket/x"  # URIs are kept as they are
    assert spec.env_variables == {"LR": "3e-5", "STEPS": "10", "DEBUG": "true"}
    cpu = load_spec("experiment_name: e\ncommand: x\ncompute: {accelerator_type: cpu}\n")
    assert cpu.compute.accelerator_type == "CPU" and not cpu.compute.uses_gpus


def test_errors_name_the_field_and_line(tmp_path):
    bad = EXAMPLE.replace("num_accelerators: 2", "num_accelerators: 0")
    assert problems(bad, base_dir=tmp_path) == [
        "compute.num_accelerators: must be an integer from 1 to 64 (per node) (line 5); got 0"
    ]
    for value in ("-1", "two", "1.5", "true", '"2"'):
        (problem,) = problems(EXAMPLE.replace("num_accelerators: 2", f"num_accelerators: {value}"))
        assert problem.startswith(
            "compute.num_accelerators: must be an integer from 1 to 64 (per node) (line 5)"
        )


def test_unknown_fields_name_the_nearest_valid_one():
    assert problems(EXAMPLE.replace("num_accelerators", "num_acelerators")) == [
        "compute.num_acelerators: unknown field (line 5); did you mean 'num_accelerators'?"
    ]
    assert problems(EXAMPLE.replace("max_retries", "max_retry")) == [
        "max_retry: unknown field (line 8); did you mean 'max_retries'?"
    ]
    # a compute field put at the top level
    (problem,) = problems(EXAMPLE + "num_nodes: 2\n")
    assert problem == "num_nodes: unknown field (line 9); did you mean 'compute.num_nodes'?"
    (problem,) = problems(EXAMPLE + "zzz: 1\n")
    assert problem.startswith("zzz: unknown field (line 9); valid fields: experiment_name")


def test_yaml_syntax_errors_give_line_and_column():
    (problem,) = problems("experiment_name: x\ncommand: [a, b\nmax_retries: 1\n")
    assert problem.startswith("YAML syntax error:")
    assert "(line 3, column" in problem
    (problem,) = problems("experiment_name: x\n  command: y\n")
    assert "YAML syntax error" in problem and "line 2" in problem


def test_every_problem_is_reported_at_once(tmp_path):
    text = (
        "experiment_name: ''\n"
        "compute:\n"
        "  num_acelerators: 2\n"
        "  num_nodes: 0\n"
        "  accelerator_type: [x]\n"
        "max_retries: -1\n"
        "timeout_minutes: 0\n"
        "working_dir: missing-folder\n"
        "env_variables: {1BAD: x, CUDA_VISIBLE_DEVICES: '0', NESTED: {a: 1}}\n"
        "max_retries: 1\n"
    )
    with pytest.raises(SpecError) as info:
        load_spec(text, base_dir=tmp_path, source="w.yaml")
    found = [str(p) for p in info.value.problems]
    assert found == [
        "command: required: the command to run (e.g. torchrun --nproc_per_node=2 train.py)",
        "experiment_name: must be a non-empty string: the MLflow experiment (created if "
        'missing), at most 250 characters (line 1); got ""',
        "compute.num_acelerators: unknown field (line 3); did you mean 'num_accelerators'?",
        "compute.num_nodes: must be an integer from 1 to 256 (line 4); got 0",
        "compute.accelerator_type: must be GPU, CPU, or a GPU model name such as H100 or A100 "
        "(line 5)",
        "timeout_minutes: must be a positive number of minutes, at most 43200 (line 7); got 0",
        f"working_dir: '{tmp_path / 'missing-folder'}' does not exist (line 8)",
        "env_variables.1BAD: not a valid variable name (letters, digits and _, not starting "
        "with a digit) (line 9)",
        "env_variables.CUDA_VISIBLE_DEVICES: is set by jupyter-air for each attempt (line 9); "
        "use compute.num_accelerators instead",
        "env_variables.NESTED: must be a string, a number or true/false (line 9)",
        "max_retries: duplicate field (first given on line 6) (line 10)",
    ]
    message = str(info.value)
    assert message.startswith("w.yaml: 11 problems\n  command: required")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "the file is empty: a workload needs experiment_name and command"),
        ("- a\n- b\n", "a workload file must be a mapping of fields"),
        ("experiment_name: e\ncommand: '  '\n", "command: must be a non-empty string"),
        ("experiment_name: e\ncommand: []\n", "command: must be a non-empty string"),
        ("experiment_name: e\ncommand: x\ncompute: 4\n", "compute: must be a mapping"),
        ("experiment_name: e\ncommand: x\nenv_variables: [A]\n", "env_variables: must be a"),
        ("experiment_name: 3\ncommand: x\n", "experiment_name: must be a non-empty string"),
        ("experiment_name: e\ncommand: x\nmlflow_run_name: ''\n", "mlflow_run_name: must be"),
    ],
)
def test_more_mistakes(text, expected):
    found = problems(text)
    assert found[0].startswith(expected), found


def test_files(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(EXAMPLE)
    spec, text = load_spec_file(path)
    assert text == EXAMPLE
    assert spec.mlflow_artifact_location == str(tmp_path / "artifacts" / "my-training")
    with pytest.raises(SpecError, match=r"nope\.yaml: no such file"):
        load_spec_file(tmp_path / "nope.yaml")


def alias_bomb(levels: int, width: int = 9) -> str:
    """The "billion laughs" shape: each level a list of `width` aliases of the one below."""
    lines = ["experiment_name: e", "command: 'true'", "x0: &a0 [lol]"]
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"x{level}: &a{level} [{aliases}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once(tmp_path):
    """9 levels of 9 aliases expand to 387 million values from a 1 KB file: refused, in a
    moment, with what is wrong (it hung `air run` for minutes before)."""
    import time

    start = time.monotonic()
    found = problems(alias_bomb(9), base_dir=tmp_path)
    took = time.monotonic() - start
    assert len(found) == 1 and "expands to more than 100,000 values" in found[0], found
    assert "aliases" in found[0]
    assert took < 30, took  # bounded, not exponential (~0.1 s; minutes before)


def test_aliases_of_a_reasonable_size_still_work(tmp_path):
    spec = load_spec(
        "experiment_name: &name my-exp\nmlflow_run_name: *name\n"
        "env_variables: &env {LR: '3e-5'}\ncommand: 'true'\n",
        base_dir=tmp_path,
    )
    assert spec.run_name == "my-exp" and spec.env_variables == {"LR": "3e-5"}


def test_deep_nesting_is_refused_clearly(tmp_path):
    found = problems(
        "experiment_name: e\ncommand: 'true'\nx: " + "[" * 5000 + "]" * 5000, base_dir=tmp_path
    )
    assert found == ["the document is nested too deeply to be a workload file"], found


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "w") as file:
        file.write("experiment_name: e\ncommand: 'true'\nenv_variables:\n")
        for i in range(400_000):
            file.write(f"  V{i}: '{'x' * 40}'\n")
    with pytest.raises(SpecError) as info:
        load_spec_file(big)
    message = str(info.value)
    assert "may be at most 1 MiB" in message and str(big) in message


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        (
            "compute:\n  num_accelerators",
            "1000000000000000000000000000000",
            "compute.num_accelerators: must be an integer from 1 to 64 (per node) (line 4)",
        ),
        (
            "compute:\n  num_nodes",
            "10000",
            "compute.num_nodes: must be an integer from 1 to 256 (line 4)",
        ),
        ("max_retries", "1000000", "max_retries: must be an integer from 0 to 100 (line 3)"),
        (
            "timeout_minutes",
            "1e12",
            "timeout_minutes: must be a positive number of minutes, at most 43200 (line 3)",
        ),
        (
            "mlflow_run_name",
            "'" + "r" * 300 + "'",
            "mlflow_run_name: must be a non-empty string, at most 250 characters (line 3)",
        ),
    ],
)
def test_counts_that_cannot_be_meant_are_refused(tmp_path, field, value, expected):
    text = f"experiment_name: e\ncommand: 'true'\n{field}: {value}\n"
    found = problems(text, base_dir=tmp_path)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_too_many_environment_variables(tmp_path):
    env = "".join(f"  V{i}: x\n" for i in range(1001))
    found = problems(
        f"experiment_name: e\ncommand: 'true'\nenv_variables:\n{env}", base_dir=tmp_path
    )
    assert found == ["env_variables: has 1001 variables; at most 1000 (line 3)"], found


def test_the_local_backend_refuses_more_nodes_than_one_machine_runs(tmp_path):
    from jupyter_air.backends.base import ShapeError
    from jupyter_air.backends.local import LocalBackend
    from jupyter_air.workloads.jobs import check_shape

    spec = load_spec(
        "experiment_name: e\ncommand: 'true'\ncompute:\n  accelerator_type: CPU\n  num_nodes: 17\n",
        base_dir=tmp_path,
    )
    with pytest.raises(ShapeError) as refused:
        LocalBackend().check(spec)
    assert refused.value.field == "compute.num_nodes"
    with pytest.raises(SpecError) as info:
        check_shape(LocalBackend(), spec)
    assert str(info.value).startswith(
        "compute.num_nodes: is 17; the local backend runs at most 16 nodes, all on this machine "
        "(line 5); to run on several machines, connect a Ray cluster"
    ), str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("experiment_name", "runs\\e]0;owned\\a", "U+001B (ESC) at position 5"),
        ("mlflow_run_name", "ring\\a", "U+0007 (BEL) at position 5"),
        ("experiment_name", "clear\\e[2J", "U+001B (ESC) at position 6"),
        ("mlflow_run_name", "c1\\x9b2J", "U+009B (CSI) at position 3"),
        ("mlflow_run_name", "two\\nlines", "U+000A (LF) at position 4"),
    ],
)
def test_names_with_control_characters_are_refused_naming_field_and_character(field, value, shown):
    names = {"experiment_name": "e", "mlflow_run_name": "r", field: value}
    text = "".join(f'{name}: "{text}"\n' for name, text in names.items()) + "command: x\n"
    (problem,) = problems(text)
    line = list(names).index(field) + 1
    assert problem.startswith(f"{field}: contains the control character {shown}"), problem
    assert f"(line {line})" in problem
