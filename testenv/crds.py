"""Crds reads CustomResourceDefinitions from files and tells when an apiserver serves them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

__all__ = ["crd_is_served", "load_crds", "load_manifests"]

_SUFFIXES = (".yaml", ".yml", ".json")

Request = Callable[[str, str], Awaitable[Any]]


def _files(paths: Iterable[Path | str]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in _SUFFIXES)
        elif path.is_file():
            yield path
        else:
            raise FileNotFoundError(f"no such CRD file or directory: {path}")


def load_manifests(paths: Iterable[Path | str]) -> list[dict[str, Any]]:
    """Every object in the multi-document YAML/JSON files under ``paths`` (dirs are recursed).

    Raises:
        ValueError: a document is not valid YAML or not a mapping; names the file.
    """
    objects: list[dict[str, Any]] = []
    for path in _files(paths):
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: invalid YAML: {error}") from error
        for document in documents:
            if document is None:
                continue
            if not isinstance(document, dict):
                raise ValueError(f"{path}: expected a mapping, found {type(document).__name__}")
            objects.append(document)
    return objects


def load_crds(paths: Iterable[Path | str]) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions among the manifests under ``paths``."""
    return [m for m in load_manifests(paths) if m.get("kind") == "CustomResourceDefinition"]


async def crd_is_served(request: Request, crd: dict[str, Any]) -> bool:
    """Whether discovery lists the CRD's plural under every served version of its group."""
    spec = crd["spec"]
    plural = spec["names"]["plural"]
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        try:
            listing = await request("GET", f"/apis/{spec['group']}/{version['name']}")
        except RuntimeError:
            return False
        if not any(r.get("name") == plural for r in listing.get("resources", [])):
            return False
    return True
