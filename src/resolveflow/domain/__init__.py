"""Pure types and rules. Nothing in here performs I/O (enforced by scripts/check_layers.py)."""
