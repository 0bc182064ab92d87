"""Scaffold: ``reconcile init`` starts a project, ``reconcile create api`` adds a kind to it.

The counterpart of kubebuilder's commands for Python: the project's ``make test`` runs its tests
against a real kube-apiserver (testenv), ``make manifests`` writes CRDs and RBAC from the code,
``make image`` its OCI image (``reconcile.scaffold.image``, which builds reconcile's own too).
"""

from reconcile.scaffold.image import ImageError, ImageSpec, build_image
from reconcile.scaffold.project import Project, Resource, plural_of
from reconcile.scaffold.render import ScaffoldError
from reconcile.scaffold.scaffold import create_api, image_spec, init_project

__all__ = [
    "ImageError",
    "ImageSpec",
    "Project",
    "Resource",
    "ScaffoldError",
    "build_image",
    "create_api",
    "image_spec",
    "init_project",
    "plural_of",
]
