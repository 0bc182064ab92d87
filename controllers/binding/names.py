"""Names are the names the binding controller gives bindings, Works and execution namespaces.

Karmada derives every name from the resource template, so the same template always lands in the
same binding and the same Works (pkg/util/names):

- binding: ``lower(<name>-<kind>)``, with ":" in the name replaced by "." (RBAC names may hold
  ":", which CRD object names may not);
- Work: ``<lower(name)>-<hash>``, where the hash is FNV-32a over ``lower(<ns>-<name>-<kind>)``
  (cluster-scoped: ``lower(<name>-<kind>)``), printed in decimal and each digit mapped through
  apimachinery's ``rand.SafeEncodeString`` alphabet. ``default/nginx`` Deployment gives
  ``nginx-687f7fb96f``;
- execution namespace: ``karmada-es-<cluster>``;
- binding id: the binding's ``(cluster)resourcebinding.karmada.io/permanent-id`` label, copied onto
  its Works and their manifests so they can be listed by binding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_GVK,
    CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    cluster_of_execution_namespace,
    execution_namespace,
)

__all__ = [
    "binding_id_label",
    "binding_id_of",
    "binding_name",
    "cluster_of_execution_namespace",
    "execution_namespace",
    "fnv32a",
    "is_cluster_binding",
    "safe_encode_string",
    "work_name",
]

# k8s.io/apimachinery/pkg/util/rand: consonants and digits only, so hashes spell no words.
_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193


def fnv32a(data: bytes) -> int:
    """The 32-bit FNV-1a hash of ``data`` (Go's ``hash/fnv.New32a``)."""
    value = _FNV32_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def safe_encode_string(text: str) -> str:
    """Map each character to the safe alphabet by code point, as ``rand.SafeEncodeString`` does."""
    return "".join(_SAFE_ALPHABET[ord(char) % len(_SAFE_ALPHABET)] for char in text)


def _dns_safe(name: str) -> str:
    # Only ":" is replaced, like Karmada: it is the common case (system:* RBAC objects).
    return name.replace(":", ".")


def binding_name(kind: str, name: str) -> str:
    """The (Cluster)ResourceBinding name of a template: ``lower(<name>-<kind>)``."""
    return f"{_dns_safe(name)}-{kind}".lower()


def work_name(kind: str, name: str, namespace: str = "") -> str:
    """The name of the Works of a template, the same in every execution namespace."""
    prefix = _dns_safe(name).lower()
    key = f"{namespace}-{prefix}-{kind}" if namespace else f"{prefix}-{kind}"
    # Karmada hashes with kr/pretty "%v", which prints a string as its plain bytes.
    digest = fnv32a(key.lower().encode())
    return f"{prefix}-{safe_encode_string(str(digest))}"


def is_cluster_binding(binding: Mapping[str, Any]) -> bool:
    """Whether ``binding`` is a ClusterResourceBinding (by kind, else by having no namespace)."""
    kind = binding.get("kind")
    if kind:
        return bool(kind == CLUSTER_RESOURCE_BINDING_GVK.kind)
    return not (binding.get("metadata") or {}).get("namespace")


def binding_id_label(binding: Mapping[str, Any]) -> str:
    """The permanent-id label key of this kind of binding."""
    if is_cluster_binding(binding):
        return CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL
    return RESOURCE_BINDING_PERMANENT_ID_LABEL


def binding_id_of(binding: Mapping[str, Any]) -> str | None:
    """The binding's permanent id (from its own permanent-id label), or None when unset."""
    labels = (binding.get("metadata") or {}).get("labels") or {}
    value = labels.get(binding_id_label(binding))
    return str(value) if value else None
