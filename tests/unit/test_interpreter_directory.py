"""A directory of ResourceInterpreterCustomizations loads file by file; bad files are reported."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controllers.interpreter import CustomizationSet, Interpreter, InterpreterError, Operation
from controllers.interpreter.directory import load_customization_directory, thirdparty_backend
from reconcile import GVK

asyncio_test = pytest.mark.asyncio(loop_scope="session")
WIDGET = GVK("example.io", "v1", "Widget")


def customization(name: str, replicas: int) -> str:
    return f"""apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: {name}
spec:
  target:
    apiVersion: example.io/v1
    kind: Widget
  customizations:
    replicaResource:
      luaScript: |
        function GetReplicas(obj) return {replicas}, nil end
"""


@asyncio_test
async def test_each_bad_file_is_one_error_and_the_others_load(tmp_path: Path) -> None:
    (tmp_path / "example.io" / "v1" / "Widget" / "testdata").mkdir(parents=True)
    good = tmp_path / "example.io" / "v1" / "Widget" / "customizations.yaml"
    good.write_text(customization("widget", 7))
    (tmp_path / "example.io" / "v1" / "Widget" / "testdata" / "case.yaml").write_text("name: x\n")
    (tmp_path / "broken.yaml").write_text("a: [unclosed\n")
    (tmp_path / "other.yml").write_text("kind: ConfigMap\n")
    (tmp_path / "syntax.json").write_text(
        customization("syntax", 1).replace("return 1", "return (")
    )
    (tmp_path / "notes.txt").write_text("not read")
    loaded = await load_customization_directory(tmp_path)
    assert loaded.customizations.names() == ["widget"]
    assert len(loaded.errors) == 3, loaded.errors
    broken, other, syntax = loaded.errors
    assert broken.startswith(f"{tmp_path / 'broken.yaml'}: not valid YAML")
    assert other == f"{tmp_path / 'other.yml'}: no ResourceInterpreterCustomization document found"
    assert syntax.startswith(f"{tmp_path / 'syntax.json'}: syntax/replicaResource: ")
    interpreter = Interpreter(thirdparty=thirdparty_backend(loaded.customizations, None))
    widget = {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert (await interpreter.get_replicas(widget))[0] == 7


@asyncio_test
async def test_the_directory_answers_before_the_next_layer(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(customization("first", 1))
    first = (await load_customization_directory(tmp_path)).customizations
    then = CustomizationSet()
    await then.apply(yaml.safe_load(customization("second", 2)))
    backend = Interpreter(thirdparty=thirdparty_backend(first, then), native=None)
    widget = {"apiVersion": "example.io/v1", "kind": "Widget"}
    assert await backend.get_replicas(widget) == (1, None)
    assert backend.handles(WIDGET, Operation.INTERPRET_REPLICA)


@asyncio_test
async def test_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InterpreterError, match="is not a directory"):
        await load_customization_directory(tmp_path / "missing")


@asyncio_test
async def test_the_controller_manager_asks_the_directory_then_the_bundled_ones(
    tmp_path: Path,
) -> None:
    from controllers.cli import _parser
    from controllers.controllermanager import _interpreter

    args = _parser().parse_args(["controller-manager", "--interpreter-customizations", "d"])
    assert args.interpreter_customizations == Path("d")
    (tmp_path / "widget.yaml").write_text(customization("widget", 4))
    (tmp_path / "bad.yaml").write_text("kind: [\n")
    interpreter = await _interpreter(tmp_path)
    assert interpreter is not None
    widget = {"apiVersion": "example.io/v1", "kind": "Widget"}
    assert (await interpreter.get_replicas(widget))[0] == 4
    clone = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "spec": {"replicas": 2}}
    assert (await interpreter.get_replicas(clone))[0] == 2  # the bundled CloneSet still answers
    assert await _interpreter(None) is None
