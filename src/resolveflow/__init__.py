"""ResolveFlow: issue triage where the model proposes, the application authorizes and code executes."""

__version__ = "0.1.0"
