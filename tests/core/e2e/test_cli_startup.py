"""What a CLI command imports on its way to its answer: ``--help``, ``tenants list`` and
``proposals show`` never load LangGraph, langchain-core, procrastinate, numpy, torch or the web
stack (the start-up time budget of issue 12; benchmarks/cli_startup.py measures the time itself).

Structural, not timed: the command runs in a fresh interpreter, which then reports which of the
heavy packages ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

HEAVY = ("langgraph", "langchain_core", "procrastinate", "numpy", "torch", "fastapi", "uvicorn")

PROBE = """
import json, os, sys
from resolveflow.cli import main
code = main(sys.argv[1:])
heavy = set(os.environ["PROBE_HEAVY"].split(","))
loaded = sorted({name.split(".")[0] for name in sys.modules} & heavy)
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


class Probe:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "resolveflow", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    def loaded(self, *args: str, code: int = 0) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            env={**self.env, "PROBE_HEAVY": ",".join(HEAVY)},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        report = json.loads(result.stderr.strip().splitlines()[-1])
        assert report["code"] == code, result.stderr
        return list(report["loaded"])


@pytest.fixture
def probe(database_url: str, tmp_path: Path) -> Probe:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(RESOLVEFLOW_DATABASE_URL=database_url, RESOLVEFLOW_HOME=str(tmp_path / "home"))
    return Probe(env)


def test_help_loads_none_of_the_heavy_packages(probe: Probe) -> None:
    assert probe.loaded("--help") == []


def test_tenants_list_and_proposals_show_load_none_of_them_once_migrated(probe: Probe) -> None:
    assert probe.run("tenants", "add", "acme").returncode == 0  # the first start migrates
    made = probe.run("principals", "add", "--subject", "rita", "--role", "requester", "--json")
    probe.env["RESOLVEFLOW_TOKEN"] = json.loads(made.stdout)["token"]
    assert probe.loaded("tenants", "list") == []
    assert probe.loaded("proposals", "show", str(uuid.uuid4()), code=3) == []
