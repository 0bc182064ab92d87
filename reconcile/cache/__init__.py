"""Cache keeps local copies of objects in sync with the apiserver: the indexed store, the reflector
that lists and watches into it, shared informers, and the cache that serves reads from them
(controller-runtime's pkg/cache with client-go's tools/cache).
"""

from reconcile.cache.cache import (
    DEFAULT_CACHE_SYNC_TIMEOUT,
    Cache,
    CacheNotStarted,
    CacheSyncError,
    InformerScope,
    ListerWatcherSource,
)
from reconcile.cache.informer import (
    FuncHandler,
    HandlerRegistration,
    ResourceEventHandler,
    SharedInformer,
    Transform,
    strip_managed_fields,
)
from reconcile.cache.options import (
    ALL_NAMESPACES,
    METADATA_API_VERSION,
    PARTIAL_OBJECT_METADATA,
    ByObject,
    CacheOptions,
    KindScope,
    ScopeError,
    as_partial_object_metadata,
)
from reconcile.cache.reflector import (
    INITIAL_EVENTS_END,
    WATCH_LIST_ENV,
    Backoff,
    BackoffManager,
    Reflector,
    ReflectorSink,
    StagingSink,
    StateSignal,
    is_resource_version_too_large,
    watch_list_default,
)
from reconcile.cache.store import (
    LABEL_INDEX_PREFIX,
    NAMESPACE_INDEX,
    Indexer,
    IndexFunc,
    decode,
    encode,
    release_heap,
)

__all__ = [
    "ALL_NAMESPACES",
    "Backoff",
    "BackoffManager",
    "ByObject",
    "Cache",
    "CacheNotStarted",
    "CacheOptions",
    "CacheSyncError",
    "DEFAULT_CACHE_SYNC_TIMEOUT",
    "FuncHandler",
    "HandlerRegistration",
    "INITIAL_EVENTS_END",
    "IndexFunc",
    "Indexer",
    "InformerScope",
    "KindScope",
    "LABEL_INDEX_PREFIX",
    "ListerWatcherSource",
    "METADATA_API_VERSION",
    "NAMESPACE_INDEX",
    "PARTIAL_OBJECT_METADATA",
    "Reflector",
    "ReflectorSink",
    "ResourceEventHandler",
    "ScopeError",
    "SharedInformer",
    "StagingSink",
    "StateSignal",
    "Transform",
    "WATCH_LIST_ENV",
    "as_partial_object_metadata",
    "decode",
    "encode",
    "is_resource_version_too_large",
    "release_heap",
    "strip_managed_fields",
    "watch_list_default",
]
