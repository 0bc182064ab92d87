"""testenv runs real kube-apiserver and etcd control planes for tests, like envtest does in Go.

One Environment holds a host cluster and any number of member clusters on a shared etcd;
EnvironmentProvider engages its members in a multi-cluster manager.
Binaries are found by envtest's lookup order or built from the Go module proxy
(``reconcile testenv install``). The pytest plugin (``testenv.plugin``) shares the control
planes across a session.
"""

from testenv.apiserver import ADMIN_GROUPS, ADMIN_USER, APIServer
from testenv.binaries import (
    Binaries,
    BinaryNotFound,
    BuildError,
    find_binaries,
    install_binaries,
    kubernetes_version,
    store_dir,
)
from testenv.controlplane import ControlPlane, RequestError, User
from testenv.crds import load_crds, load_manifests
from testenv.environment import HOST, Environment
from testenv.etcd import Etcd
from testenv.eventually import consistently, eventually
from testenv.fake import BUILTIN_KINDS, FakeClient, FakeClusters, FakeKind, ScalePaths
from testenv.manager import manager_for, running
from testenv.process import StartError
from testenv.provider import EnvironmentProvider
from testenv.webhooks import WebhookInstaller, WebhookInstallOptions, WebhookServing

__all__ = [
    "ADMIN_GROUPS",
    "ADMIN_USER",
    "APIServer",
    "BUILTIN_KINDS",
    "Binaries",
    "BinaryNotFound",
    "BuildError",
    "ControlPlane",
    "Environment",
    "EnvironmentProvider",
    "Etcd",
    "FakeClient",
    "FakeClusters",
    "FakeKind",
    "HOST",
    "RequestError",
    "ScalePaths",
    "StartError",
    "User",
    "WebhookInstallOptions",
    "WebhookInstaller",
    "WebhookServing",
    "consistently",
    "eventually",
    "find_binaries",
    "install_binaries",
    "kubernetes_version",
    "load_crds",
    "load_manifests",
    "manager_for",
    "running",
    "store_dir",
]
