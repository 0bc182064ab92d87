"""``reconcile interpret`` runs one operation on files and prints its result, like karmadactl.

Inputs live in tests/data/interpreter: the seed's Workload with a Lua customization, a Deployment
for the native defaults, status item lists, and broken files for the error paths.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.interpreter.cli import main

DATA = Path(__file__).parents[1] / "data" / "interpreter"
ROOT = Path(__file__).parents[2]
CUSTOMIZATION = ["--customization", str(DATA / "workload-customization.yaml")]
DESIRED = ["--desired-file", str(DATA / "workload-desired.yaml")]
OBSERVED = ["--observed-file", str(DATA / "workload-observed.yaml")]
STATUS = ["--status-file", str(DATA / "workload-status.yaml")]


def interpret(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run the command; the exit status, the parsed output (YAML or JSON) and stderr."""
    status = main(["interpret", *argv])
    out, err = capsys.readouterr()
    return status, yaml.safe_load(out) if out else None, err


WORKLOAD_REQUIRES = {"resourceRequest": {"cpu": "100m", "memory": "64Mi"}}

WORKLOAD_CASES: list[tuple[str, list[str], dict[str, Any]]] = [
    ("InterpretReplica", DESIRED, {"replica": 3, "requires": WORKLOAD_REQUIRES}),
    ("InterpretReplica", OBSERVED, {"replica": 3, "requires": None}),
    ("InterpretStatus", OBSERVED + DESIRED, {"status": {"readyReplicas": 3}}),
    ("InterpretStatus", DESIRED, {"status": None}),
    ("InterpretHealth", OBSERVED, {"healthy": True}),
    ("InterpretHealth", DESIRED, {"healthy": False}),
    ("InterpretDependency", DESIRED, {"dependencies": [
        {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": "nginx-config"},
        {"apiVersion": "v1", "kind": "ServiceAccount", "namespace": "default", "name": "nginx"},
    ]}),
    ("InterpretComponent", DESIRED, {"components": [
        {"name": "workload", "replicas": 3, "replicaRequirements": WORKLOAD_REQUIRES},
    ]}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("operation", "inputs", "expected"),
    WORKLOAD_CASES,
    ids=[f"{case[0]}-{case[1][0].removeprefix('--')}" for case in WORKLOAD_CASES],
)
def test_each_operation_of_a_customization(
    capsys: pytest.CaptureFixture[str], operation: str, inputs: list[str], expected: Any
) -> None:
    status, output, err = interpret(capsys, *CUSTOMIZATION, "--operation", operation, *inputs)
    assert (status, err) == (0, "")
    assert output == expected


def test_revise_retain_and_aggregate_print_whole_objects(
    capsys: pytest.CaptureFixture[str],
) -> None:
    desired = yaml.safe_load((DATA / "workload-desired.yaml").read_text())
    args = [*CUSTOMIZATION, *DESIRED]
    _, revised, _ = interpret(
        capsys, *args, "--operation", "ReviseReplica", "--desired-replica", "1"
    )
    assert revised == {"revised": {**desired, "spec": {**desired["spec"], "replicas": 1}}}
    _, retained, _ = interpret(capsys, *args, *OBSERVED, "--operation", "Retain")
    assert retained == {"retained": {**desired, "spec": {**desired["spec"], "paused": True}}}
    _, aggregated, _ = interpret(capsys, *args, *STATUS, "--operation", "AggregateStatus")
    assert aggregated == {"aggregatedStatus": {**desired, "status": {"readyReplicas": 3}}}
    _, no_items, _ = interpret(capsys, *args, "--operation", "AggregateStatus")
    assert no_items["aggregatedStatus"]["status"] == {"readyReplicas": 0}


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["interpret", *CUSTOMIZATION, *DESIRED, "--operation", "InterpretReplica",
                   "-o", "json"])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    assert json.loads(out) == {"replica": 3, "requires": WORKLOAD_REQUIRES}


def test_without_a_customization_the_native_defaults_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    desired = ["--desired-file", str(DATA / "deployment-desired.yaml")]
    observed = ["--observed-file", str(DATA / "deployment-observed.yaml")]
    _, replicas, _ = interpret(capsys, *desired, "--operation", "InterpretReplica")
    assert replicas == {"replica": 4, "requires": {
        "resourceRequest": {"cpu": "500m", "memory": "128Mi"}, "namespace": "default"}}  # fmt: skip
    _, status, _ = interpret(capsys, *observed, "--operation", "InterpretStatus")
    assert status == {"status": {
        "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
        "availableReplicas": 2, "generation": 1, "resourceTemplateGeneration": 2}}  # fmt: skip
    _, health, _ = interpret(capsys, *observed, "--operation", "InterpretHealth")
    assert health == {"healthy": True}
    items = ["--status-file", str(DATA / "deployment-status.yaml")]
    _, aggregated, _ = interpret(capsys, *desired, *items, "--operation", "AggregateStatus")
    assert aggregated["aggregatedStatus"]["status"] == {
        "observedGeneration": 2, "replicas": 4, "updatedReplicas": 4, "readyReplicas": 3,
        "availableReplicas": 3, "unavailableReplicas": 1}  # fmt: skip


ERROR_CASES: list[tuple[str, list[str], str]] = [
    ("missing-file", ["--operation", "InterpretReplica", "--desired-file", str(DATA / "nope.yaml")],
     "error: cannot read desired file .*nope.yaml: No such file or directory"),
    ("bad-yaml", ["--operation", "InterpretReplica", "--desired-file", str(DATA / "not-yaml.yaml")],
     r"error: desired file .*not-yaml.yaml is not valid YAML: expected ',' or ']', but got ':' "
     r"\(line 2, column 5\)"),
    ("bad-customization-yaml", ["--customization", str(DATA / "not-yaml.yaml"), "--operation",
                                "InterpretReplica", *DESIRED], "error: not valid YAML"),
    ("not-a-customization", ["--customization", str(DATA / "workload-desired.yaml"),
                             "--operation", "InterpretReplica", *DESIRED],
     "error: no ResourceInterpreterCustomization document found"),
    ("lua-runtime-error", ["--customization", str(DATA / "broken-customization.yaml"),
                           "--operation", "InterpretReplica", *DESIRED],
     r"error: workload-broken/replicaResource: luaScript:2: attempt to index field 'missing'"),
    ("lua-sandbox", ["--customization", str(DATA / "broken-customization.yaml"),
                     "--operation", "InterpretHealth", *OBSERVED],
     "error: workload-broken/healthInterpretation: luaScript:2: os.execute is not available"),
    ("lua-syntax-error", ["--customization", str(DATA / "syntax-error-customization.yaml"),
                          "--operation", "InterpretReplica", *DESIRED],
     r"error: workload-syntax/replicaResource: luaScript:3: unexpected symbol near 'end'"),
    ("rule-missing", ["--customization", str(DATA / "broken-customization.yaml"),
                      "--operation", "Retain", *DESIRED, *OBSERVED],
     "error: .*broken-customization.yaml has no Retain rule .spec.customizations.retention. "
     "targeting workload.example.io/v1alpha1 Workload"),
    ("other-kind", [*CUSTOMIZATION, "--operation", "InterpretReplica", "--desired-file",
                    str(DATA / "deployment-desired.yaml")], "targeting apps/v1 Deployment"),
    ("no-native-rule", ["--operation", "ReviseReplica", "--desired-replica", "1", *DESIRED],
     "error: no built-in interpreter handles ReviseReplica for workload.example.io/v1alpha1"),
    ("no-object", [*CUSTOMIZATION, "--operation", "InterpretHealth"],
     "error: InterpretHealth needs --desired-file or --observed-file"),
    ("retain-needs-both", [*CUSTOMIZATION, "--operation", "Retain", *DESIRED],
     "error: Retain needs --desired-file and --observed-file"),
    ("revise-needs-replicas", [*CUSTOMIZATION, "--operation", "ReviseReplica", *DESIRED],
     "error: ReviseReplica needs --desired-replica"),
    ("bad-status-item", [*CUSTOMIZATION, "--operation", "AggregateStatus", *DESIRED,
                         "--status-file", str(DATA / "bad-status.yaml")],
     "error: status file .*bad-status.yaml: status item applied must be a boolean"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"), [case[1:] for case in ERROR_CASES], ids=[case[0] for case in ERROR_CASES]
)
def test_errors_exit_one_with_one_clear_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, output, err = interpret(capsys, *argv)
    assert status == 1
    assert output is None
    assert err.count("\n") == 1
    assert err.startswith("error: ")
    assert __import__("re").search(message, err), err


def test_an_unknown_operation_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["interpret", "--operation", "Explode", *DESIRED])
    assert exited.value.code == 2
    assert "invalid choice: 'Explode'" in capsys.readouterr().err


def test_runs_as_a_separate_process() -> None:
    command = [
        sys.executable, "-c",
        "import sys; from controllers.interpreter.cli import main; sys.exit(main(sys.argv[1:]))",
        "interpret", *CUSTOMIZATION, *DESIRED, "--operation", "InterpretComponent", "-o", "json",
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["components"][0]["replicas"] == 3
    failing = [*command[:3], "interpret", "--operation", "InterpretReplica", *DESIRED[:1], "/nope"]
    done = subprocess.run(
        failing, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot read desired file /nope")


HOSTILE_CUSTOMIZATION = """
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: hostile}
spec:
  target: {apiVersion: workload.example.io/v1alpha1, kind: Workload}
  customizations:
    replicaResource:
      luaScript: |
        function GetReplicas(obj)
          string.find(string.rep("a", 350), "a-a-a-a-b")
          return 1
        end
"""


def test_a_hostile_script_is_one_error_line_within_the_time_limit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(HOSTILE_CUSTOMIZATION)
    start = time.monotonic()
    status, output, err = interpret(
        capsys, "--customization", str(hostile), "--operation", "InterpretReplica", *DESIRED
    )
    elapsed = time.monotonic() - start
    assert (status, output) == (1, None)
    assert err.startswith("error: hostile/replicaResource: GetReplicas ran longer than 1 s")
    assert err.count("\n") == 1
    assert elapsed < 1.2 + 1  # the call's 1.1 s, plus starting a worker


def nested(depth: int) -> str:
    return "a: " + "[" * depth + "]" * depth + "\n"


def aliases(width: int, depth: int) -> str:
    lines = ["l0: &l0 [x]"]
    for level in range(1, depth + 1):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (nested(5000), r"desired file .*input.yaml is nested too deeply$"),
        (nested(300), r"desired file .*input.yaml is nested more than 200 levels deep$"),
        (aliases(30, 5), r"holds more than 1000000 values \(YAML aliases count each use\)$"),
        ("a: b\n\tc: d\n", r"is not valid YAML: found character '\\t' that cannot start any token"),
    ],
    ids=["recursion", "too-deep", "alias-bomb", "tab"],
)
def test_hostile_input_files_are_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "input.yaml"
    path.write_text(text)
    with_deadline = time.monotonic() + 10
    status, output, err = interpret(
        capsys, "--operation", "InterpretReplica", "--desired-file", str(path)
    )
    assert time.monotonic() < with_deadline
    assert (status, output) == (1, None)
    assert err.count("\n") == 1
    assert re.search(message, err.strip()), err


THIRDPARTY = Path(__file__).parents[1] / "data" / "karmada-thirdparty"


def test_a_directory_of_karmadas_customizations_answers_for_its_kinds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\n"
        "status: {ready: true}\n"
    )
    argv = ["--operation", "InterpretHealth", "--observed-file", str(policy)]
    assert interpret(capsys, *argv)[0] == 1  # no built-in source knows the kind
    status, output, err = interpret(capsys, *argv, "--interpreter-customizations", str(THIRDPARTY))
    assert (status, output, err) == (0, {"healthy": True}, "")


def test_a_bad_file_of_the_directory_is_one_error_line_and_the_rest_still_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "broken.yaml").write_text("a: [unclosed\n")
    (tmp_path / "workload.yaml").write_text((DATA / "workload-customization.yaml").read_text())
    argv = ["--operation", "InterpretReplica", *DESIRED, "--interpreter-customizations"]
    status, output, err = interpret(capsys, *argv, str(tmp_path))
    assert status == 0
    assert output["replica"] == 3
    assert err.count("\n") == 1
    assert err.startswith(f"error: {tmp_path / 'broken.yaml'}: not valid YAML")
    assert err.endswith("(skipped)\n")
