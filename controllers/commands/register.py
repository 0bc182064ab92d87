"""Register is ``reconcile register``: make a Pull cluster on the host and hand out its agent's
kubeconfig (``controllers.register`` writes the objects).

The kubeconfig carries a bearer token of the host, so it goes to ``--output`` created with mode
0600 (an existing file is narrowed to 0600 before it is written), or to stdout for a pipe; the
summary line goes to stderr then, keeping stdout a kubeconfig alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from controllers.commands.errors import CommandError
from controllers.register import RegisterError, RegisterResult, register_cluster
from reconcile import Client

__all__ = ["run_register", "write_private"]


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner alone (mode 0600)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        # O_CREAT's mode applies only to a new file: narrow an existing one too.
        os.fchmod(file.fileno(), 0o600)
        file.write(text)


async def run_register(
    name: str,
    *,
    host: Client,
    out: TextIO,
    err: TextIO,
    output: Path | None = None,
    cluster_namespace: str,
    api_endpoint: str | None = None,
    provider: str | None = None,
    region: str | None = None,
    server: str | None = None,
    refresh: bool = False,
) -> RegisterResult:
    """Register Pull cluster ``name`` (or with ``refresh`` renew its agent's token) and write the
    agent's kubeconfig to ``output`` (mode 0600) or ``out``; the summary goes to ``out`` when
    the kubeconfig went to a file, else to ``err``.

    Raises:
        CommandError: register refused (a Push cluster, another agent's, no Cluster to refresh).
        ApiError: the host refused a step.
        OSError: ``output`` cannot be written.
    """
    try:
        result = await register_cluster(
            name,
            host=host,
            cluster_namespace=cluster_namespace,
            api_endpoint=api_endpoint,
            provider=provider,
            region=region,
            server=server,
            refresh=refresh,
        )
    except RegisterError as error:
        raise CommandError(str(error)) from None
    verb = "token renewed" if refresh else "registered"
    if output is None:
        out.write(result.kubeconfig)
        print(f"{verb}: {result.summary()}", file=err)
    else:
        write_private(output, result.kubeconfig)
        print(f"{verb}: {result.summary()}; agent kubeconfig written to {output}", file=out)
    return result
