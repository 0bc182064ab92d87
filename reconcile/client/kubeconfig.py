"""Kubeconfig reads kubeconfig files and picks the cluster and user of one context, as kubectl does.

``read_kubeconfig`` loads one file or a ``$KUBECONFIG``-style list and merges them with
client-go's rules (clientcmd's loader): for each of clusters, users and contexts the first file
that names an entry wins it whole, and ``current-context`` comes from the first file that sets it.
Missing files in a list are skipped (an explicit single file must exist). Relative paths inside a
file (certificate-authority, client-certificate, client-key, tokenFile, and an exec command that
names a path) are resolved against that file's directory, as clientcmd's ResolveLocalPaths does;
``~`` is expanded in file names and in those paths.

``select_context`` returns the context's ``Selection``: the cluster's server, CA, TLS server name
and proxy, and the user's entry as written (``client.credentials`` turns it into credentials).
Anything kubectl would accept but that cannot be honoured safely is refused with a
``ConfigError`` that names it: ``insecure-skip-tls-verify: true`` (TLS verification stays on),
an ``auth-provider`` (removed from client-go; exec plugins replace it). Errors name files, entries
and keys, never secret values.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "ConfigError",
    "Selection",
    "kubeconfig_paths",
    "load_document",
    "merge_kubeconfigs",
    "pem_of",
    "read_kubeconfig",
    "resolve_paths",
    "select_context",
]

_SECTIONS: Final = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
_CLUSTER_PATHS: Final = ("certificate-authority",)
_USER_PATHS: Final = ("client-certificate", "client-key", "tokenFile")
_EXEC: Final = "client.authentication.k8s.io/exec"


class ConfigError(Exception):
    """No usable cluster configuration: missing file or context, bad kubeconfig, insecure TLS."""


@dataclass(frozen=True, repr=False)
class Selection:
    """What one context of a kubeconfig points at: its cluster settings and its user's entry."""

    context: str
    server: str
    ca_data: bytes | None
    tls_server_name: str | None
    proxy_url: str | None
    namespace: str | None
    user_name: str | None
    user: Mapping[str, Any]
    exec_cluster_config: Any
    """``extensions[client.authentication.k8s.io/exec]`` of the cluster, for exec plugins."""

    def __repr__(self) -> str:
        # The user entry holds secrets; a repr names only where the context points.
        return f"Selection(context={self.context!r}, server={self.server!r})"


def kubeconfig_paths(value: str) -> list[Path]:
    """The files of a ``$KUBECONFIG`` value in order, ``~`` expanded, empty and repeats dropped."""
    paths: list[Path] = []
    for item in value.split(os.pathsep):
        if item and (path := Path(item).expanduser()) not in paths:
            paths.append(path)
    return paths


def read_kubeconfig(paths: Sequence[Path], *, explicit: bool = False) -> dict[str, Any]:
    """Load and merge ``paths`` (missing ones skipped unless ``explicit``), paths resolved.

    Raises:
        ConfigError: no file exists, a file cannot be read or is not a kubeconfig.
    """
    documents: list[dict[str, Any]] = []
    for path in paths:
        if not path.exists():
            if explicit:
                raise ConfigError(f"kubeconfig not found: {path}")
            continue  # kubectl skips the missing files of a $KUBECONFIG list
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"kubeconfig {path}: {_one_line(error)}") from None
        documents.append(_parse(text, path))
    if not documents:
        raise ConfigError(f"kubeconfig not found: {os.pathsep.join(map(str, paths))}")
    return merge_kubeconfigs(documents)


def _parse(text: str, path: Path) -> dict[str, Any]:
    document = load_document(text, f"kubeconfig {path}")
    return resolve_paths(document, path.parent, where=f"kubeconfig {path}")


def load_document(text: str, where: str) -> dict[str, Any]:
    """``text`` parsed as a kubeconfig mapping (empty text: an empty kubeconfig, as for kubectl).

    Raises:
        ConfigError: not YAML, named by line and column only, or not a mapping. PyYAML's own
            message quotes the offending line, which in a kubeconfig may hold a token or a key,
            so it is never passed on.
    """
    import yaml  # here, not at import: only a process that reads a kubeconfig needs PyYAML

    try:
        document = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{where}: not YAML ({error.problem or 'syntax error'}{at})") from None
    except yaml.YAMLError:
        raise ConfigError(f"{where}: not YAML") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: not a kubeconfig (not a mapping)")
    return document


def resolve_paths(document: Mapping[str, Any], base: Path, *, where: str) -> dict[str, Any]:
    """A copy of ``document`` whose relative file references are made absolute against ``base``."""
    resolved = dict(document)
    for section, field in _SECTIONS:
        entries = []
        for entry in _entries(document, section, field, where):
            body = dict(entry[field])
            if field == "cluster":
                _absolute(body, _CLUSTER_PATHS, base)
            elif field == "user":
                _absolute(body, _USER_PATHS, base)
                body = _resolve_exec_command(body, base)
            entries.append({**entry, field: body})
        resolved[section] = entries
    return resolved


def _absolute(body: dict[str, Any], keys: Iterable[str], base: Path) -> None:
    for key in keys:
        value = body.get(key)
        if isinstance(value, str) and value:
            body[key] = str(base / Path(value).expanduser())


def _resolve_exec_command(user: dict[str, Any], base: Path) -> dict[str, Any]:
    # clientcmd resolves an exec command only when it names a path (has a separator): a bare
    # name is looked up on $PATH when the plugin runs.
    spec = user.get("exec")
    if isinstance(spec, dict):
        command = spec.get("command")
        if isinstance(command, str) and os.sep in command:
            user["exec"] = {**spec, "command": str(base / Path(command).expanduser())}
    return user


def merge_kubeconfigs(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Merge kubeconfigs as clientcmd does: per named entry and for current-context, first wins."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": [], "current-context": ""}
    for document in documents:
        if not merged["current-context"] and document.get("current-context"):
            merged["current-context"] = str(document["current-context"])
        for section, _ in _SECTIONS:
            taken = {entry["name"] for entry in merged[section]}
            merged[section].extend(
                entry for entry in document.get(section) or () if entry["name"] not in taken
            )
    return merged


def _entries(
    document: Mapping[str, Any], section: str, field: str, where: str
) -> list[dict[str, Any]]:
    entries = document.get(section) or []
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: {section} is not a list")
    normalized = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError(f"{where}: {section}[{index}] has no name")
        body = entry.get(field) or {}
        if not isinstance(body, dict):
            raise ConfigError(f"{where}: {section}[{index}].{field} is not a mapping")
        normalized.append({**entry, field: body})
    return normalized


def select_context(
    document: Mapping[str, Any], context: str | None = None, *, where: str = "kubeconfig"
) -> Selection:
    """The cluster and user of ``context`` (default: the current context).

    Raises:
        ConfigError: no such context, cluster or user; no server; an unusable CA; a refused setting.
    """
    checked = {
        section: {e["name"]: e[field] for e in _entries(document, section, field, where)}
        for section, field in _SECTIONS
    }
    name = context or str(document.get("current-context") or "")
    if not name:
        raise ConfigError(f"{where}: no context given and current-context is not set")
    found = checked["contexts"].get(name)
    if found is None:
        raise ConfigError(f"{where}: context {name!r} not found")
    cluster_name = found.get("cluster")
    cluster = checked["clusters"].get(cluster_name) if cluster_name else None
    if cluster is None:
        raise ConfigError(f"{where}: cluster {cluster_name!r} of context {name!r} not found")
    user_name = found.get("user") or None
    user: Mapping[str, Any] = {}
    if user_name is not None:
        if user_name not in checked["users"]:
            raise ConfigError(f"{where}: user {user_name!r} of context {name!r} not found")
        user = checked["users"][user_name]
    return _selection(name, cluster, user_name, user, found, f"{where}: cluster {cluster_name!r}")


def _selection(
    context: str,
    cluster: Mapping[str, Any],
    user_name: str | None,
    user: Mapping[str, Any],
    found: Mapping[str, Any],
    where: str,
) -> Selection:
    if cluster.get("insecure-skip-tls-verify") is True:
        raise ConfigError(f"{where}: refusing to skip TLS verification of the apiserver")
    server = str(cluster.get("server") or "").rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise ConfigError(f"{where}: server {server or '(none)'!r} is not an http(s) URL")
    proxy = cluster.get("proxy-url") or None
    if proxy is not None and not str(proxy).startswith(("http://", "https://")):
        raise ConfigError(f"{where}: proxy-url {proxy!r} is not an http(s) URL (no SOCKS)")
    extensions = cluster.get("extensions") or []
    exec_config = next(
        (e.get("extension") for e in extensions if isinstance(e, dict) and e.get("name") == _EXEC),
        None,
    )
    return Selection(
        context=context,
        server=server,
        ca_data=pem_of(cluster, "certificate-authority", where),
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy_url=None if proxy is None else str(proxy),
        namespace=found.get("namespace") or None,
        user_name=user_name,
        user=user,
        exec_cluster_config=exec_config,
    )


def pem_of(body: Mapping[str, Any], key: str, where: str) -> bytes | None:
    """The PEM bytes of ``key``-data (base64, preferred as in client-go) or of the file ``key``.

    Raises:
        ConfigError: the data is not base64 or the file cannot be read.
    """
    data = body.get(f"{key}-data")
    if data:
        try:
            # Go's decoder skips line breaks; a wrapped base64 block is as valid for kubectl.
            return base64.b64decode("".join(str(data).split()), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError(f"{where}: {key}-data is not base64") from None
    path = body.get(key)
    if not path:
        return None
    try:
        return Path(str(path)).expanduser().read_bytes()
    except OSError as error:
        raise ConfigError(f"{where}: {key} {path}: {_one_line(error)}") from None


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
