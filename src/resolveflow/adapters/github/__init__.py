"""GitHub: the protocol the product depends on, and its githubkit client."""
