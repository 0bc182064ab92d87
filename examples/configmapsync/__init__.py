"""The multi-cluster guide's example: keep a host ConfigMap in every member, report per member."""

from examples.configmapsync.controller import (
    COPY_LABEL,
    STATE_ANNOTATION_PREFIX,
    SYNC_LABEL,
    ConfigMapSync,
    setup,
)

__all__ = ["COPY_LABEL", "STATE_ANNOTATION_PREFIX", "SYNC_LABEL", "ConfigMapSync", "setup"]
