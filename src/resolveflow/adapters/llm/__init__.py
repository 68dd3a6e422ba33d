"""Chat models: the protocol, the OpenAI-compatible client and the scripted model."""
