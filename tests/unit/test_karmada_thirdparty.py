"""Karmada's own third-party customizations load unchanged and give what Karmada's testdata expects.

``tests/data/karmada-thirdparty`` holds, per kind, Karmada's ``customizations.yaml`` and its
``testdata/*-test.yaml`` cases (inputs and expected ``output``, see the README there). The whole
tree loads through ``load_customization_directory`` as ``--interpreter-customizations`` does, and
each case runs its operation through the Interpreter; results compare as Karmada's
thirdparty_test.go compares them (dependencies in sorted order, ``{{EXCLUDE}}`` fields ignored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.interpreter import AggregatedStatusItem, Interpreter, Operation
from controllers.interpreter.directory import (
    DirectoryLoad,
    load_customization_directory,
    thirdparty_backend,
)

asyncio_test = pytest.mark.asyncio(loop_scope="session")

TREE = Path(__file__).parents[1] / "data" / "karmada-thirdparty"
EXCLUDE = "{{EXCLUDE}}"
Obj = dict[str, Any]


def _cases() -> list[Any]:
    cases = []
    for path in sorted(TREE.rglob("testdata/*-test.yaml")):
        kind = path.parent.parent.relative_to(TREE)
        for index, case in enumerate(yaml.safe_load_all(path.read_text())):
            if case:
                cases.append(pytest.param(case, id=f"{kind}/{path.stem}#{index}:{case['name']}"))
    return cases


CASES = _cases()
_loaded: list[DirectoryLoad] = []


async def _tree() -> DirectoryLoad:
    if not _loaded:
        _loaded.append(await load_customization_directory(TREE))
    return _loaded[0]


def _without_excluded(value: Any, expected: Any) -> tuple[Any, Any]:
    """Both values with the fields ``expected`` marks ``{{EXCLUDE}}`` left out."""
    if isinstance(value, dict) and isinstance(expected, dict):
        kept = {k: v for k, v in expected.items() if v != EXCLUDE}
        pairs = {k: _without_excluded(value.get(k), v) for k, v in kept.items()}
        left = {k: v for k, v in value.items() if k not in expected or expected[k] != EXCLUDE}
        return ({k: pairs[k][0] if k in pairs else v for k, v in left.items()},
                {k: p[1] for k, p in pairs.items()})  # fmt: skip
    return value, expected


async def _run(interpreter: Interpreter, case: Obj) -> Obj:
    operation = Operation(case["operation"])
    desired: Obj = case.get("desiredObj") or case.get("observedObj") or {}
    observed: Obj = case.get("observedObj") or desired
    if operation is Operation.INTERPRET_DEPENDENCY:
        found = await interpreter.get_dependencies(desired)
        return {"dependencies": [d.to_dict() for d in found]}
    if operation is Operation.AGGREGATE_STATUS:
        items = [AggregatedStatusItem.from_dict(i) for i in case.get("statusItems") or []]
        return {"aggregatedStatus": await interpreter.aggregate_status(desired, items)}
    if operation is Operation.INTERPRET_STATUS:
        return {"status": await interpreter.reflect_status(observed)}
    if operation is Operation.INTERPRET_HEALTH:
        return {"healthy": await interpreter.interpret_health(observed)}
    if operation is Operation.RETAIN:
        return {"retained": await interpreter.retain(desired, observed)}
    if operation is Operation.REVISE_REPLICA:
        revised = await interpreter.revise_replica(observed, case["inputReplicas"])
        return {"revised": revised}
    replica, requires = await interpreter.get_replicas(observed)
    return {"replica": replica, "requires": requires.to_dict() if requires else None}


def _order(dependencies: list[Obj]) -> list[Obj]:
    key = ("apiVersion", "kind", "namespace", "name")
    return sorted(dependencies, key=lambda d: tuple(str(d.get(k, "")) for k in key))


@asyncio_test
async def test_karmadas_third_party_tree_loads_without_errors() -> None:
    loaded = await _tree()
    assert loaded.errors == ()
    assert len(loaded.customizations) == 3


@pytest.mark.parametrize("case", CASES)
@asyncio_test
async def test_karmadas_testdata_gives_the_expected_output(case: Obj) -> None:
    interpreter = Interpreter(thirdparty=thirdparty_backend((await _tree()).customizations, None))
    results = await _run(interpreter, case)
    assert set(case["output"]) <= set(results), "an expected output the operation has not"
    for name, expected in case["output"].items():
        got = results[name]
        if name == "dependencies":
            got, expected = _order(got), _order(expected)
        got, expected = _without_excluded(got, expected)
        assert got == expected, name
