"""reconcile is a controller-runtime style framework for writing Kubernetes controllers in Python.

The data path (work queue, reflector, informers, cache, client) and the runtime
(controller, builder, manager) arrive module by module; see docs/architecture.md.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
