"""Commands are the operator commands of ``reconcile``, karmadactl-style, for the cluster lifecycle.

``taint`` (``taint``, ``taintspec``) adds, overwrites and removes Cluster taints; ``cordon``
marks a Cluster unschedulable and ``uncordon`` schedulable again; ``register`` makes a Pull
cluster and its agent's host kubeconfig (``controllers.register``); ``unjoin`` undoes ``reconcile
join`` and ``register``; ``get`` lists the member objects of a kind as the Works report them.
Each touches only what it was asked about: taint changes go through a read-modify-write with
Conflict retries (``clustertaints``) that leaves every other taint as the taint controllers wrote
it. ``cli`` wires them into the ``reconcile`` command line; ``CommandError`` is a refusal in one
line.
"""

from __future__ import annotations

from controllers.commands.errors import CommandError

__all__ = ["CommandError"]
