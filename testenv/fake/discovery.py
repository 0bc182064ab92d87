"""Discovery is the documents a FakeClient's REST mapper reads, generated from its registry.

They answer ``/api``, ``/apis`` and ``/api/v1`` or ``/apis/<group>/<version>`` as the apiserver
does, with each kind's resource and its status and scale subresources.
"""

from __future__ import annotations

from typing import Any

from testenv.fake.errors import no_subresource
from testenv.fake.registry import VERBS, Registry

__all__ = ["discovery_document"]


def discovery_document(registry: Registry, path: str) -> Any:
    """The discovery document at ``path`` for the kinds of ``registry``.

    Raises:
        NotFound: a group version no kind is served in.
    """
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"]}
    if path == "/apis":
        groups: dict[str, list[str]] = {}
        for gvk in (kind.gvk for kind in registry):
            versions = groups.setdefault(gvk.group, [])
            if gvk.group and gvk.version not in versions:
                versions.append(gvk.version)
        return {
            "kind": "APIGroupList",
            "groups": [
                {
                    "name": group,
                    "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in vs],
                    "preferredVersion": {"groupVersion": f"{group}/{vs[0]}", "version": vs[0]},
                }
                for group, vs in groups.items()
                if group
            ],
        }
    group, _, version = path.removeprefix("/api/").removeprefix("/apis/").rpartition("/")
    resources: list[dict[str, Any]] = []
    for kind in registry:
        if (kind.gvk.group, kind.gvk.version) != (group, version):
            continue
        entry = {"name": kind.plural, "kind": kind.gvk.kind, "namespaced": kind.namespaced}
        resources.append(
            {
                **entry,
                "singularName": kind.gvk.kind.lower(),
                "verbs": list(VERBS),
                "shortNames": list(kind.short_names),
            }
        )
        for sub in sorted(kind.resource.subresources):
            sub_kind = "Scale" if sub == "scale" else kind.gvk.kind
            verbs = ["get", "patch", "update"]
            resources.append(
                {**entry, "name": f"{kind.plural}/{sub}", "kind": sub_kind, "verbs": verbs}
            )
    if not resources:
        raise no_subresource()
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}
