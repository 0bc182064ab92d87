"""Gen writes the manifests a controller project ships from its Python declarations.

controller-gen's role: ``reconcile gen rbac MODULE...`` writes the ClusterRole/Roles that the
modules' ``PERMISSIONS`` declare (``reconcile.rbac``). ``reconcile.gen.cli.add_gen_parser``
registers the ``gen`` command on a CLI.
"""

__all__: list[str] = []
