"""Documents turns kubeconfig text that providers read into a checked document, leaking nothing.

A provider reads kubeconfigs it did not write (a folder an operator fills, Secrets any writer of
that namespace controls):

- YAML errors are reported by line and column only, as for ``ClusterConfig.from_kubeconfig``
  (both use ``reconcile.client.kubeconfig.load_document``): PyYAML's own message quotes the
  offending line, which in a kubeconfig may be a token or a key;
- unlike ``from_kubeconfig``, ``check_inline`` refuses what makes a kubeconfig reach beyond
  its own text, for sources that are untrusted input: exec credential plugins (a command to
  run), auth providers, and file references (``certificate-authority``,
  ``client-certificate``, ``client-key``, ``tokenFile``, which would read this process's
  files). Skipping TLS verification is always refused, by the kubeconfig loader itself
  (``reconcile.client.kubeconfig``): a ``ClusterConfig`` cannot turn it off, so no provider
  option can either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

from reconcile.client.kubeconfig import ConfigError, load_document

__all__ = ["check_inline", "fingerprint", "parse_kubeconfig"]

_CLUSTER_FILES: Final = ("certificate-authority",)
_USER_FILES: Final = ("client-certificate", "client-key", "tokenFile")
_USER_PROGRAMS: Final = ("exec", "auth-provider")


def parse_kubeconfig(text: str, where: str) -> dict[str, Any]:
    """``text`` parsed as a kubeconfig mapping (an empty text is an empty kubeconfig).

    Raises:
        ConfigError: not YAML (with its line and column, never its content) or not a mapping.
    """
    return load_document(text, where)


def check_inline(document: Mapping[str, Any], where: str) -> None:
    """Refuse a kubeconfig that runs programs or reads files: only inline data is allowed.

    Every cluster and user entry is checked, used by a context or not, so what is accepted does
    not depend on which context is current.

    Raises:
        ConfigError: naming the entry and the refused setting (never its value).
    """
    for entry in _entries(document, "clusters"):
        body = entry.get("cluster")
        if isinstance(body, Mapping):
            for key in _CLUSTER_FILES:
                if body.get(key):
                    raise ConfigError(
                        f"{where}: cluster {entry.get('name')!r}: {key} names a file;"
                        f" only {key}-data is accepted here"
                    )
    for entry in _entries(document, "users"):
        body = entry.get("user")
        if not isinstance(body, Mapping):
            continue
        for key in _USER_PROGRAMS:
            if body.get(key):
                raise ConfigError(
                    f"{where}: user {entry.get('name')!r}: {key} refused (it would run or"
                    " configure credential code; give a token or client certificate inline)"
                )
        for key in _USER_FILES:
            if body.get(key):
                inline = "token" if key == "tokenFile" else f"{key}-data"
                raise ConfigError(
                    f"{where}: user {entry.get('name')!r}: {key} names a file;"
                    f" only {inline} is accepted here"
                )


def _entries(document: Mapping[str, Any], section: str) -> list[Mapping[str, Any]]:
    entries = document.get(section) or []
    if not isinstance(entries, list):
        return []  # the loader reports the malformed section with its own message
    return [entry for entry in entries if isinstance(entry, Mapping)]


def fingerprint(value: Any) -> str:
    """A digest of decoded JSON-like data, to tell a changed kubeconfig entry from a rewrite."""
    encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(encoded).hexdigest()
