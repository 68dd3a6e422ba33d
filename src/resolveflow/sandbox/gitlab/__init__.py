"""The sandbox GitLab: a fake GitLab on 127.0.0.1 for the ``gitlab.issue_create`` kind.

``state.GitLabState`` holds projects, labels, users, tokens and issues behind one lock and renders
them as GitLab's REST v4 JSON; ``server.FakeGitLabServer`` routes requests over it with injected
faults and write counters, on ``sandbox.loopback``.
"""
