"""The MCP server (issue 32 part 3): any agent proposes, ResolveFlow authorizes.

``resolveflow mcp`` serves it over stdio; ``serve`` mounts it at ``/mcp`` (streamable HTTP).
An agent is a principal: it authenticates with the principal's API token, and every tool acts as
that principal, in its tenant, through the same services as the CLI and the web API. Read tools
(``results``/``tools``): search, ask, a run's evidence, a refine packet. Propose tools: a comment
and labels, a new GitHub issue, a new issue in a configured project (GitHub or GitLab), an email
reply; each creates a proposal that waits in the inbox and returns its digest and link.

There is no tool that approves, rejects, edits a decision, executes or reads another tenant:
those words are not in the server's vocabulary, whatever an agent sends (docs/mcp.md).
"""
