"""Strategies builds malformed Kubernetes objects for the fuzz tests from the CRDs' own schemas.

``from_schema`` walks an openAPIV3Schema of ``deploy/crds`` and generates values of that shape in
which, at every level, a field may instead hold a value of the wrong type (``MALFORMED``: None,
booleans, huge and negative numbers, NaN and infinities as a JSON decoder may hand them over,
very long or odd unicode strings, empty or deeply nested containers). Enum strings are sometimes
replaced by other text, so code reading them meets values the apiserver would have refused.
``fuzz_settings`` fixes Hypothesis' settings for reproducible runs and ``within`` bounds one case
in wall time (SIGALRM), so a hang fails that case instead of the whole run.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from collections.abc import Iterator, Mapping
from datetime import timedelta
from functools import cache
from types import FrameType
from typing import Any, Final

import yaml
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from controllers.api import CRD_DIRECTORY

__all__ = [
    "CaseTimeout",
    "MALFORMED",
    "crd_schema",
    "deep",
    "from_schema",
    "fuzz_settings",
    "json_values",
    "label_maps",
    "mostly",
    "nasty_text",
    "within",
]

# Hypothesis' deadline flags slow cases; SIGALRM (``within``) stops hung ones.
_DEADLINE: Final = timedelta(seconds=3)
# Python's default recursion limit is 1,000 frames; the client's JSON decoder (orjson) accepts
# 1,024 levels, so an object from the apiserver can be nested deeper than plain recursion allows.
_DEEPEST: Final = 1_000


class CaseTimeout(AssertionError):
    """One fuzz case ran past its wall-time bound."""


def fuzz_settings(max_examples: int) -> settings:
    """Reproducible settings: derandomized, no example database, ``max_examples`` cases.

    ``FUZZ_SHRINK=0`` in the environment skips shrinking, to see a first failure fast.
    """
    phases = [Phase.explicit, Phase.generate]
    if os.environ.get("FUZZ_SHRINK") != "0":
        phases.append(Phase.shrink)
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=_DEADLINE,
        phases=phases,
        report_multiple_bugs=False,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Raise ``CaseTimeout`` in the main thread if the block runs longer than ``seconds``.

    pytest-timeout arms the same timer (SIGALRM) for the whole test; its handler and remaining
    time are restored afterwards, so its limit still holds.
    """

    def expire(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"the case ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:
            left = outer - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))


class _Deep(list[Any]):
    """The outer list of a deeply nested value; shown as ``deep(n)`` in Hypothesis' reports,
    whose pretty printer would itself recurse too deep."""

    depth: int

    def __repr__(self) -> str:
        return f"deep({self.depth})"


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` nine times in ten, else ``bad`` (``one_of`` would pick each half the time)."""
    # sampled_from shrinks towards its first items, so minimal failing cases keep the good parts.
    return _choice(*[good] * 9, bad)


def deep(depth: int, leaf: Any = "x") -> Any:
    """``leaf`` wrapped in ``depth`` alternating one-item lists and single-key dicts."""
    value = leaf
    for level in range(depth - 1):
        value = {"a": value} if level % 2 else [value]
    outer = _Deep([value])
    outer.depth = depth
    return outer


# Field names the controllers read, so random objects hit real branches.
_FIELDS: Final = (
    "apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "spec",
    "status", "template", "containers", "image", "command", "args", "replicas", "uid",
    "resourceVersion", "matchLabels", "matchExpressions", "key", "operator", "values", "value",
    "path", "clusterNames", "exclude", "labelSelector", "fieldSelector", "taints", "effect",
    "zones", "zone", "region", "provider", "resourceSummary", "allocatable", "pods", "cpu",
)  # fmt: skip

nasty_text: Final = st.one_of(
    st.sampled_from(
        [
            "", " ", "a", "member1", "member2", "apps/v1", "v1", "Deployment", "In", "NotIn",
            "Exists", "Gt", "add", "remove", "replace", "Tag", "/", "/spec", "/spec/replicas",
            "/metadata/labels/a", "~", "~2", "/a~1b", "-", "/-", "0", "-1", "1e400", "NaN",
            "nginx:1.25", "docker.io/library/nginx@sha256:" + "a" * 64, "a" * 64, "a" * 300,
            "x" * 20_000, "\x00", "\u202e\u0301é", "\ud7ff\U0001f600", "null", "{", "[1,", "{}",
            "key: [", "- a\n- b", "&a [*a, *a]", "2024-01-01T00:00:00Z", "not-a-date",
            "example.com/key", "UPPER", "a=b", "in (x", "!", "app in (a,b),!b,c!=d",
        ]
    ),
    st.text(max_size=40),
)  # fmt: skip

_HUGE: Final = (2**31, 2**31 - 1, 2**53 + 1, 2**63, -(2**63), 10**30, -(10**30))

_numbers: Final = st.one_of(
    st.integers(-3, 10),
    st.sampled_from(_HUGE),
    st.sampled_from([0.5, -0.0, 1e308, math.inf, -math.inf, math.nan]),
)

_scalars: Final = st.one_of(st.none(), st.booleans(), _numbers, nasty_text)

json_values: Final = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(_FIELDS), nasty_text), inner, max_size=4),
    ),
    max_leaves=12,
)
"""Any JSON value (plus NaN and infinities), keys biased towards fields the controllers read."""


def _choice(*options: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # one_of flattens nested one_ofs into one list of branches, so a one_of of many scalars
    # would outweigh the well-formed branch beside it; a flatmap over a choice stays one branch.
    return st.sampled_from(options).flatmap(lambda chosen: chosen)


MALFORMED: Final = _choice(
    _scalars,
    st.just([]),
    st.just({}),
    st.lists(_scalars, min_size=1, max_size=3),
    st.dictionaries(nasty_text, _scalars, min_size=1, max_size=3),
    st.sampled_from([50, 400, _DEEPEST]).map(deep),
)
"""A value standing where something else was expected: the wrong type, empty, or nested deep."""

label_maps: Final = st.dictionaries(
    st.one_of(st.sampled_from(["app", "tier", "example.com/zone", "env"]), nasty_text),
    st.one_of(st.sampled_from(["web", "db", "a", ""]), nasty_text),
    max_size=3,
)


def _string(schema: Mapping[str, Any], malformed: bool) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        enum = st.sampled_from(schema["enum"])
        return st.one_of(enum, enum, nasty_text) if malformed else enum
    return nasty_text


def _integer() -> st.SearchStrategy[Any]:
    return st.one_of(st.integers(-2, 12), st.integers(-2, 12), st.sampled_from(_HUGE))


def _object(schema: Mapping[str, Any], depth: int, malformed: bool) -> st.SearchStrategy[Any]:
    properties = schema.get("properties")
    if properties:
        optional = {
            key: from_schema(value, depth + 1, malformed=malformed)
            for key, value in properties.items()
        }
        return st.fixed_dictionaries({}, optional=optional)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return st.dictionaries(
            nasty_text, from_schema(extra, depth + 1, malformed=malformed), max_size=3
        )
    # x-kubernetes-preserve-unknown-fields: any object.
    return st.dictionaries(st.one_of(st.sampled_from(_FIELDS), nasty_text), json_values, max_size=4)


def _typed(schema: Mapping[str, Any], depth: int, malformed: bool) -> st.SearchStrategy[Any]:
    """Values of the schema's own type (contents may still be malformed further down)."""
    if schema.get("x-kubernetes-int-or-string"):
        return st.one_of(_integer(), nasty_text)
    kind = schema.get("type")
    if kind == "object":
        return _object(schema, depth, malformed)
    if kind == "array":
        items = from_schema(schema.get("items") or {}, depth + 1, malformed=malformed)
        return st.lists(items, max_size=3)
    if kind == "string":
        return _string(schema, malformed)
    if kind == "integer":
        return _integer()
    if kind == "number":
        return _numbers
    if kind == "boolean":
        return st.booleans()
    return json_values


def from_schema(
    schema: Mapping[str, Any], depth: int = 0, *, malformed: bool = True
) -> st.SearchStrategy[Any]:
    """Values shaped by the openAPIV3Schema ``schema``, any node possibly ``MALFORMED``.

    Well-formed nodes are three times as likely as malformed ones, so cases get deep; below
    depth 8 every node is malformed-or-JSON, which bounds the strategy's size. With
    ``malformed=False`` every node has its schema's type and enum strings keep to the enum
    (what the apiserver lets through), while numbers and strings stay hostile.
    """
    typed = st.deferred(lambda: _typed(schema, depth, malformed))
    if not malformed:
        return typed if depth <= 8 else st.none()
    if depth > 8:
        return _choice(MALFORMED, json_values)
    return _choice(typed, typed, typed, MALFORMED)


@cache
def _crd(filename: str) -> dict[str, Any]:
    with open(CRD_DIRECTORY / filename, encoding="utf-8") as stream:
        crd: dict[str, Any] = yaml.safe_load(stream)
    return crd


def crd_schema(filename: str, *path: str) -> dict[str, Any]:
    """The schema at ``path`` (property names) in the first version of ``deploy/crds/filename``."""
    node: dict[str, Any] = _crd(filename)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for key in path:
        node = node["items"] if key == "[]" else node["properties"][key]
    return node
