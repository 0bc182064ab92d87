"""The authentication API group's objects as TypedDicts, one module per version (generated
by ``reconcile gen types``)."""
