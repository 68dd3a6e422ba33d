"""The executor gate: claim, send once, record, reconcile."""
