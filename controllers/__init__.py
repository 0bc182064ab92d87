"""controllers holds the Karmada-style multi-cluster controllers and the ``reconcile`` command line.

The controllers use only the public API of ``reconcile``; the command-line application
(``controllers.cli``, ``controllers.demo``) may also start testenv control planes.
"""

__all__: list[str] = []
