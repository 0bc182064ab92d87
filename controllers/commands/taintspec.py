"""Taintspec parses the taint arguments of ``reconcile taint`` as karmadactl (kubectl) does.

An argument is ``key=value:Effect`` or ``key:Effect`` to add a taint, ``key:Effect-`` to remove
the taint with that key and effect, ``key-`` to remove every taint with that key. Keys are
qualified names (``[DNS-subdomain/]name``), values label values, effects those the Cluster CRD
accepts: NoSchedule, PreferNoSchedule, NoExecute. The error texts are kubectl's (lifted into
Karmada's ``pkg/util/lifted/taint.go``), apimachinery's validation messages included, so an
operator who knows one tool reads the other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from controllers.api import Taint
from controllers.commands.errors import CommandError

__all__ = [
    "EFFECTS",
    "TaintChange",
    "label_value_errors",
    "parse_taint_args",
    "parse_taints",
    "qualified_name_errors",
    "taint_string",
]

EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
"""The effects the Cluster CRD's enum admits (core/v1's TaintEffect values)."""

# apimachinery's pkg/util/validation texts, word for word.
_QNAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT: Final = f"({_QNAME_FMT})?"
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT: Final = _DNS_LABEL_FMT + r"(\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
_NAME_MAX: Final = 63
_SUBDOMAIN_MAX: Final = 253


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    # apimachinery's RegexError, its double space before "or" included.
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _matches(fmt: str, value: str) -> bool:
    return re.fullmatch(fmt, value) is not None


def _dns_subdomain_errors(value: str) -> list[str]:
    errors = []
    if len(value) > _SUBDOMAIN_MAX:
        errors.append(_max_len_error(_SUBDOMAIN_MAX))
    if not _matches(_DNS_SUBDOMAIN_FMT, value):
        errors.append(_regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com"))
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery's IsQualifiedName: why ``value`` is no ``[prefix/]name``, [] when it is one."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += [f"prefix part {e}" for e in _dns_subdomain_errors(prefix)]
    else:
        qualified = _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a qualified name {qualified} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > _NAME_MAX:
        errors.append(f"name part {_max_len_error(_NAME_MAX)}")
    if not _matches(_QNAME_FMT, name):
        regex = _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        errors.append(f"name part {regex}")
    return errors


def label_value_errors(value: str) -> list[str]:
    """apimachinery's IsValidLabelValue: why ``value`` is no label value, [] when it is one."""
    errors = []
    if len(value) > _NAME_MAX:
        errors.append(_max_len_error(_NAME_MAX))
    if not _matches(_LABEL_VALUE_FMT, value):
        errors.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors


def taint_string(taint: Mapping[str, Any]) -> str:
    """core/v1's Taint.ToString: ``key=value:Effect``, ``key:Effect``, ``key=value`` or ``key``."""
    key, value, effect = taint.get("key", ""), taint.get("value", ""), taint.get("effect", "")
    text = f"{key}={value}" if value else str(key)
    return f"{text}:{effect}" if effect else text


def _go_struct(taint: Taint) -> str:
    # How Go's %v prints a corev1.Taint (key, value, effect, timeAdded), as kubectl's message does.
    return f"{{{taint.get('key', '')} {taint.get('value', '')} {taint.get('effect', '')} <nil>}}"


def _parse_one(spec: str) -> Taint:
    parts = spec.split(":")
    value, effect = "", ""
    if len(parts) == 1:
        key = parts[0]
    elif len(parts) == 2:
        effect = parts[1]
        if effect not in EFFECTS:
            raise CommandError(f"invalid taint effect: {effect}, unsupported taint effect")
        key_value = parts[0].split("=")
        if len(key_value) > 2:
            raise CommandError(f"invalid taint spec: {spec}")
        key = key_value[0]
        if len(key_value) == 2:
            value = key_value[1]
            if errors := label_value_errors(value):
                raise CommandError(f"invalid taint spec: {spec}, {'; '.join(errors)}")
    else:
        raise CommandError(f"invalid taint spec: {spec}")
    if errors := qualified_name_errors(key):
        raise CommandError(f"invalid taint spec: {spec}, {'; '.join(errors)}")
    taint = Taint(key=key)
    if value:
        taint["value"] = value
    if effect:
        taint["effect"] = cast(Any, effect)
    return taint


@dataclass(frozen=True)
class TaintChange:
    """The taints to add (or overwrite) and to remove; a removal without effect removes every
    taint with its key."""

    add: tuple[Taint, ...] = ()
    remove: tuple[Taint, ...] = ()


def _check_no_conflict(change: TaintChange) -> None:
    conflicts = [
        f'{{"{removal["key"]}":"{removal.get("effect", "")}"}}'
        for addition in change.add
        for removal in change.remove
        if addition["key"] == removal["key"]
        and (not removal.get("effect") or addition.get("effect") == removal.get("effect"))
    ]
    if conflicts:
        raise CommandError(
            "can not both modify and remove the following taint(s) in the same command: "
            + ", ".join(conflicts)
        )


def parse_taints(specs: Sequence[str]) -> TaintChange:
    """The change ``specs`` ask for, validated as kubectl's ParseTaints and karmadactl's
    Validate do (an addition needs an effect; no two additions share key and effect; no taint is
    both added and removed).

    Raises:
        CommandError: a malformed spec, in kubectl's words.
    """
    add: list[Taint] = []
    remove: list[Taint] = []
    for spec in specs:
        if spec.endswith("-"):
            removal = _parse_one(spec.removesuffix("-"))
            removal.pop("value", None)
            remove.append(removal)
            continue
        taint = _parse_one(spec)
        if not taint.get("effect"):
            raise CommandError(f"invalid taint spec: {spec}")
        if any(t["key"] == taint["key"] and t["effect"] == taint["effect"] for t in add):
            raise CommandError(
                f"duplicated taints with the same key and effect: {_go_struct(taint)}"
            )
        add.append(taint)
    change = TaintChange(tuple(add), tuple(remove))
    _check_no_conflict(change)
    return change


def _looks_like_taint(arg: str) -> bool:
    return "=" in arg or ":" in arg or arg.endswith("-")


def parse_taint_args(args: Sequence[str]) -> tuple[list[str], TaintChange]:
    """The Cluster names and the taint change of ``reconcile taint`` arguments.

    As karmadactl, names come first and taint specs after; a leading ``cluster`` or
    ``clusters`` (karmadactl's resource type, ``karmadactl taint clusters foo ...``) is accepted
    and dropped when a name follows it.

    Raises:
        CommandError: no name, no taint, a name after a taint, or a malformed spec.
    """
    names: list[str] = []
    specs: list[str] = []
    for arg in args:
        if _looks_like_taint(arg):
            specs.append(arg)
        elif specs:
            raise CommandError(f"all resources must be specified before taint changes: {arg}")
        else:
            names.append(arg)
    if len(names) > 1 and names[0].lower() in ("cluster", "clusters"):
        names = names[1:]
    if not names:
        raise CommandError("at least one cluster name must be specified")
    if not specs:
        raise CommandError("at least one taint update is required")
    return names, parse_taints(specs)
