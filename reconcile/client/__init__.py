"""Client talks to one apiserver: the interfaces every client shares (Reader, Writer, ...), the
typed-by-GVK client, its configuration and credentials, kubeconfig loading, the transport,
discovery (RESTMapper) and watch decoding (controller-runtime's pkg/client with client-go's rest
and tools/clientcmd).
"""

from reconcile.client.client import (
    DEFAULT_FIELD_MANAGER,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_REQUEST_TIMEOUT,
    Client,
)
from reconcile.client.config import (
    ClusterConfig,
    ConfigError,
)
from reconcile.client.credentials import (
    DEFAULT_TOKEN_FILE_PERIOD,
    EXEC_API_VERSIONS,
    Credentials,
    ExecCredential,
    ExecPlugin,
    TokenFile,
)
from reconcile.client.interfaces import (
    DEFAULT_PAGE_SIZE,
    ListerWatcher,
    ObjectClient,
    Reader,
    StatusWriter,
    SubResourceClient,
    WithWatch,
    Writer,
)
from reconcile.client.kubeconfig import (
    Selection,
    kubeconfig_paths,
    merge_kubeconfigs,
    pem_of,
    read_kubeconfig,
    resolve_paths,
    select_context,
)
from reconcile.client.options import (
    DeleteOptions,
    ListOptions,
    PatchType,
    Preconditions,
    PropagationPolicy,
    SelectorLike,
    WatchOptions,
    delete_options,
    object_identity,
    query_params,
    selector_string,
    split_target,
)
from reconcile.client.restmapper import (
    DEFAULT_MIN_REFRESH_INTERVAL,
    DiscoveryFetch,
    RESTMapper,
    parse_resource_list,
)
from reconcile.client.transport import (
    DEFAULT_CONNECTION_LIMIT,
    DEFAULT_READ_BUFFER,
    Transport,
)
from reconcile.client.watch import (
    DEFAULT_MAX_WATCH_EVENT_BYTES,
    WATCH_READ_GRACE,
    WatchEvents,
)

__all__ = [
    "Client",
    "ClusterConfig",
    "ConfigError",
    "Credentials",
    "DEFAULT_CONNECTION_LIMIT",
    "DEFAULT_FIELD_MANAGER",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_WATCH_EVENT_BYTES",
    "DEFAULT_MIN_REFRESH_INTERVAL",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_READ_BUFFER",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TOKEN_FILE_PERIOD",
    "DeleteOptions",
    "DiscoveryFetch",
    "EXEC_API_VERSIONS",
    "ExecCredential",
    "ExecPlugin",
    "ListOptions",
    "ListerWatcher",
    "ObjectClient",
    "PatchType",
    "Preconditions",
    "PropagationPolicy",
    "RESTMapper",
    "Reader",
    "Selection",
    "SelectorLike",
    "StatusWriter",
    "SubResourceClient",
    "TokenFile",
    "Transport",
    "WATCH_READ_GRACE",
    "WatchEvents",
    "WatchOptions",
    "WithWatch",
    "Writer",
    "delete_options",
    "kubeconfig_paths",
    "merge_kubeconfigs",
    "object_identity",
    "parse_resource_list",
    "pem_of",
    "query_params",
    "read_kubeconfig",
    "resolve_paths",
    "select_context",
    "selector_string",
    "split_target",
]
