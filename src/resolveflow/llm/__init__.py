"""Language models for every product: the port, its messages and errors, and the one call."""
