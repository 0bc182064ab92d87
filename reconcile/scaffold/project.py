"""Project is a scaffolded project's record of itself, the ``PROJECT`` file, as kubebuilder keeps.

``reconcile init`` writes it (domain, project and package names, where reconcile comes from);
``reconcile create api`` reads it, adds the kind, and regenerates what lists every kind (the
package's ``controllers/__init__.py``). Names are checked here, before anything is written, with
the rules the API will apply later: a kind is UpperCamelCase, a group a DNS label, a version
``v1``/``v1beta2``/``v2alpha1``, the domain a DNS subdomain.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import yaml

from reconcile.scaffold.render import ScaffoldError

__all__ = ["LAYOUT", "PROJECT_FILE", "Project", "Resource", "plural_of", "reconcile_requirement"]

PROJECT_FILE = "PROJECT"
LAYOUT = "reconcile.io/v1"
"""The scaffold's layout version, recorded so a later reconcile can tell what it wrote."""

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]*")
_VERSION = re.compile(r"v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?")
_PROJECT = re.compile(r"[a-z][a-z0-9]*([-_][a-z0-9]+)*")


def _check(pattern: re.Pattern[str], value: str, what: str, example: str) -> str:
    if not pattern.fullmatch(value):
        raise ScaffoldError(f"{what} {value!r} is not valid (e.g. {example})")
    return value


def _check_domain(domain: str) -> str:
    labels = domain.split(".")
    if len(domain) > 253 or not all(_DNS_LABEL.fullmatch(label) for label in labels):
        raise ScaffoldError(f"domain {domain!r} is not a DNS subdomain (e.g. example.com)")
    return domain


def plural_of(kind: str) -> str:
    """The lower-case plural the API serves ``kind`` under, by English rules as kubebuilder's."""
    word = kind.lower()
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def module_of(kind: str) -> str:
    """``WidgetSet`` → ``widget_set``: the kind's module name."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", kind).lower()


def reconcile_requirement() -> str:
    """How the scaffolded project installs reconcile: this one's checkout or wheel, else its
    release (PEP 610's direct_url.json says where an installed distribution came from)."""
    try:
        dist = metadata.distribution("reconcile")
    except metadata.PackageNotFoundError:
        return "reconcile"
    origin = dist.read_text("direct_url.json")
    if origin:
        url = json.loads(origin).get("url", "")
        if url.startswith("file://"):
            return f"reconcile @ {url}" if Path(unquote(urlparse(url).path)).is_dir() else url
    return f"reconcile=={dist.version}"


@dataclass(frozen=True)
class Resource:
    """One kind of the project."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @classmethod
    def new(cls, group: str, version: str, kind: str, *, namespaced: bool = True) -> Resource:
        """A checked resource.

        Raises:
            ScaffoldError: a name the API would refuse.
        """
        _check(_DNS_LABEL, group, "group", "webapp")
        _check(_VERSION, version, "version", "v1, v1beta1, v2alpha1")
        _check(_KIND, kind, "kind", "Guestbook")
        return cls(group, version, kind, plural_of(kind), namespaced)

    @property
    def module(self) -> str:
        """The kind's module name in the api version package and in controllers."""
        return module_of(self.kind)


@dataclass
class Project:
    """The ``PROJECT`` file: the project's names and its kinds."""

    domain: str
    project_name: str
    package: str
    reconcile: str
    resources: list[Resource] = field(default_factory=list)
    layout: str = LAYOUT

    @classmethod
    def new(cls, domain: str, repo: str, reconcile: str) -> Project:
        """A checked new project; its package is ``repo`` with dashes as underscores.

        Raises:
            ScaffoldError: a domain or project name that cannot be used.
        """
        _check(_PROJECT, repo, "project name", "guestbook-operator")
        return cls(_check_domain(domain), repo, repo.replace("-", "_"), reconcile)

    @classmethod
    def load(cls, root: Path) -> Project:
        """The project whose ``PROJECT`` file is in ``root``.

        Raises:
            ScaffoldError: there is none, or it is not one this scaffold wrote.
        """
        path = root / PROJECT_FILE
        if not path.is_file():
            raise ScaffoldError(f"no {PROJECT_FILE} file in {root}: run `reconcile init` first")
        try:
            data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise ScaffoldError(f"{path} is not YAML: {error}") from None
        if not isinstance(data, dict) or data.get("layout") != LAYOUT:
            raise ScaffoldError(f"{path} is not a reconcile project (layout {LAYOUT})")
        try:
            resources = [Resource(**r) for r in data.pop("resources", None) or []]
            names = {"domain", "project_name", "package", "reconcile", "layout"}
            return cls(**{k: v for k, v in data.items() if k in names}, resources=resources)
        except TypeError as error:  # a resource not a mapping, a field missing or unknown
            raise ScaffoldError(f"{path}: {error}") from None

    def save(self, root: Path) -> None:
        """Write the ``PROJECT`` file into ``root``."""
        text = "# Written by reconcile init / create api; read by create api.\n"
        text += yaml.safe_dump(asdict(self), sort_keys=False)
        (root / PROJECT_FILE).write_text(text, encoding="utf-8")

    def full_group(self, resource: Resource) -> str:
        """``group.domain``, the API group a kind of this project is served under."""
        return f"{resource.group}.{self.domain}"

    def has(self, resource: Resource) -> bool:
        """Whether the kind (in any version) or this exact group/version/kind exists."""
        return any(
            (r.group, r.version, r.kind) == (resource.group, resource.version, resource.kind)
            for r in self.resources
        )
