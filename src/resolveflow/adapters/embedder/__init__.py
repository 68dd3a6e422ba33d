"""Text embedders: the protocol, the local MiniLM, an OpenAI-compatible client, a hashing embedder."""
