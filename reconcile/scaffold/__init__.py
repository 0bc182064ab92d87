"""Scaffold: ``reconcile init`` starts a project, ``reconcile create api`` adds a kind to it.

The counterpart of kubebuilder's commands for Python: the project's ``make test`` runs its tests
against a real kube-apiserver (testenv), ``make manifests`` writes CRDs and RBAC from the code.
"""

from reconcile.scaffold.project import Project, Resource, plural_of
from reconcile.scaffold.render import ScaffoldError
from reconcile.scaffold.scaffold import create_api, init_project

__all__ = ["Project", "Resource", "ScaffoldError", "create_api", "init_project", "plural_of"]
