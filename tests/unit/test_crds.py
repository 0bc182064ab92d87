"""Manifest loading: bad paths and bad YAML get errors that name the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from testenv import load_crds, load_manifests


def test_a_path_that_does_not_exist_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "crds.yaml"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        load_crds([missing])


def test_invalid_yaml_is_reported_with_its_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: CustomResourceDefinition\nspec: [unclosed\n")
    with pytest.raises(ValueError, match=r"broken\.yaml: invalid YAML"):
        load_crds([broken])


def test_a_document_that_is_not_a_mapping_is_reported(tmp_path: Path) -> None:
    odd = tmp_path / "list.yaml"
    odd.write_text("- just\n- a list\n")
    with pytest.raises(ValueError, match=r"list\.yaml: expected a mapping"):
        load_manifests([odd])


def test_directories_are_walked_and_only_crds_kept(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "a.yaml").write_text(
        "kind: CustomResourceDefinition\nmetadata: {name: a}\n---\nkind: ConfigMap\n---\n"
    )
    (tmp_path / "b.json").write_text(
        '{"kind": "CustomResourceDefinition", "metadata": {"name": "b"}}'
    )
    (tmp_path / "notes.txt").write_text("ignored")
    names = sorted(crd["metadata"]["name"] for crd in load_crds([tmp_path]))
    assert names == ["a", "b"]
