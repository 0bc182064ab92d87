"""dependencies propagates what workloads depend on: Karmada's dependencies distributor.

``setup(context)`` registers the ``dependencies-distributor`` controller (``distributor``): the
ConfigMaps, Secrets, ServiceAccounts and PVCs (or whatever a customization returns) that the
template of a ``propagateDeps: true`` binding depends on get attached ResourceBindings
(``attached``) that follow the binding's clusters, and are released when nothing requires them.
"""

from controllers.dependencies.attached import (
    DEPENDED_BY_LABEL_PREFIX,
    DEPENDENCIES_ANNOTATION,
    DISTRIBUTOR_FINALIZER,
    attached_binding,
    binding_reference_key,
    depended_by_label,
    dependencies_json,
    is_attached_only,
    matches,
    merged_attached,
    recorded_dependencies,
    released,
    unique_dependencies,
)
from controllers.dependencies.distributor import (
    NAME,
    PERMISSIONS,
    DependenciesDistributor,
    binding_event_filter,
    setup,
)

__all__ = [
    "DEPENDED_BY_LABEL_PREFIX",
    "DEPENDENCIES_ANNOTATION",
    "DISTRIBUTOR_FINALIZER",
    "NAME",
    "PERMISSIONS",
    "DependenciesDistributor",
    "attached_binding",
    "binding_reference_key",
    "binding_event_filter",
    "dependencies_json",
    "depended_by_label",
    "is_attached_only",
    "matches",
    "merged_attached",
    "recorded_dependencies",
    "released",
    "setup",
    "unique_dependencies",
]
