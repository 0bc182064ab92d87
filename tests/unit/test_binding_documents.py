"""A fieldOverrider's document is bounded before it is built (issue #26 item 3).

A 298-byte YAML value with nested anchors and aliases expanded to 17.9 MB in 23.4 s on the event
loop; anchors and aliases are now refused from libyaml's events, before any node exists, and
size and depth are capped for YAML and JSON alike.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from controllers.binding import OverriderError, apply_overriders
from controllers.binding.documents import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_DEPTH,
    MAX_DOCUMENT_NODES,
    DocumentError,
    load_json,
    load_yaml,
)


def alias_bomb(levels: int = 9) -> str:
    """Billion laughs: each level lists the one before nine times."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        aliases = ",".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return "\n".join(lines) + "\n"


def test_the_alias_bomb_of_the_issue_is_refused_before_it_expands() -> None:
    bomb = alias_bomb()
    assert len(bomb) < 500
    started = time.process_time()
    with pytest.raises(DocumentError, match="anchors and aliases are not supported"):
        load_yaml(bomb)
    # Refused from the first anchor's event: nothing near the 17.9 MB was built.
    assert time.process_time() - started < 1


@pytest.mark.parametrize(
    "text",
    ["a: &x 1\n", "a: &x 1\nb: *x\n", "- &x [1]\n", "a: !!str &x 1\n", "&x {a: 1}\n"],
)
def test_any_anchor_or_alias_is_refused(text: str) -> None:
    with pytest.raises(DocumentError, match=r"\(line \d+\)"):
        load_yaml(text)


def test_a_document_over_the_size_cap_is_refused() -> None:
    text = "a: " + "x" * MAX_DOCUMENT_BYTES + "\n"
    with pytest.raises(DocumentError, match=f"more than {MAX_DOCUMENT_BYTES}"):
        load_yaml(text)
    with pytest.raises(DocumentError, match=f"more than {MAX_DOCUMENT_BYTES}"):
        load_json('"' + "x" * MAX_DOCUMENT_BYTES + '"')


@pytest.mark.parametrize("depth", [MAX_DOCUMENT_DEPTH + 1, 5_000])
def test_a_document_nested_too_deep_is_refused(depth: int) -> None:
    nested = "[" * depth + "]" * depth
    # libyaml refuses very deep flow collections itself ("while increasing flow level").
    with pytest.raises((DocumentError, yaml.YAMLError), match=r"levels|flow level"):
        load_yaml(nested)
    with pytest.raises(DocumentError, match=f"more than {MAX_DOCUMENT_DEPTH} levels"):
        load_json(nested)


def test_block_nesting_too_deep_is_refused() -> None:
    nested = (
        "".join(f"{'  ' * level}k:\n" for level in range(MAX_DOCUMENT_DEPTH + 1))
        + "  " * (MAX_DOCUMENT_DEPTH + 1)
        + "v\n"
    )
    with pytest.raises(DocumentError, match=f"more than {MAX_DOCUMENT_DEPTH} levels"):
        load_yaml(nested)


def test_a_document_of_too_many_values_is_refused() -> None:
    many = "[" + "1," * MAX_DOCUMENT_NODES + "1]"
    with pytest.raises(DocumentError, match=f"more than {MAX_DOCUMENT_NODES} values"):
        load_yaml(many)
    with pytest.raises(DocumentError, match=f"more than {MAX_DOCUMENT_NODES} values"):
        load_json(many)


def test_a_document_at_the_depth_cap_loads() -> None:
    nested = "[" * MAX_DOCUMENT_DEPTH + "]" * MAX_DOCUMENT_DEPTH
    assert load_yaml(nested) == load_json(nested) == yaml.safe_load(nested)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [x, y]\nc: {d: null, e: true, f: 1.5}\n",
        "server:\n  port: 8080\n  hosts:\n  - a\n  - b\n",
        "plain",
        "",
        "- 2024-01-01\n- '0755'\n- 0755\n- yes\n",
        "key: |\n  multi\n  line\n",
    ],
)
def test_ordinary_documents_load_as_safe_load_reads_them(text: str) -> None:
    assert load_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", ["!!int", "!!float", "!!bool", "!!timestamp x", "\x1f"])
def test_a_document_pyyaml_cannot_construct_is_an_error_the_overrider_reports(text: str) -> None:
    with pytest.raises((DocumentError, yaml.YAMLError)):
        load_yaml(text)


def test_a_field_overrider_reports_the_refusal_on_its_entry() -> None:
    config_map: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "tenant"},
        "data": {"config": alias_bomb()},
    }
    patch = [{"subPath": "/a0/0", "operator": "replace", "value": "x"}]
    overrider = {"fieldPath": "/data/config", "yaml": patch}
    with pytest.raises(OverriderError) as caught:
        apply_overriders(config_map, {"fieldOverrider": [overrider]})
    assert caught.value.entry == "fieldOverrider[0]"
    assert "anchors and aliases are not supported" in caught.value.reason
