"""Gen holds the generators of ``reconcile gen``: Python sources and manifests from declarations.

``reconcile.gen.crd`` writes CustomResourceDefinitions from ``reconcile.markers`` kinds
(controller-gen's ``crd``), ``reconcile.gen.rbac`` the ClusterRole/Roles that modules'
``PERMISSIONS`` declare (``reconcile.rbac``, controller-gen's ``rbac``); ``reconcile.gen.types``
writes the TypedDict modules of ``reconcile.api`` from the kube-apiserver's OpenAPI v3
(``reconcile.gen.openapi`` fetches it). Each generator is imported by its command only, never by
a controller.
"""

__all__: list[str] = []
