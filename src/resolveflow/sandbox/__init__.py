"""Local stand-ins for outside systems, served as real HTTP servers on loopback.

``forge`` is the fake GitHub, ``chat_server`` the fake chat model; both sit on ``loopback``.
Only the demo and the tests may import this package (an import-linter contract says so).
"""
