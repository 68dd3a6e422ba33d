"""Local stand-ins for outside systems, served as real HTTP servers on loopback.

Only the demo and the tests may import this package (an import-linter contract says so).
"""
