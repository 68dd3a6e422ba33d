"""The deployment recipe (deploy/Dockerfile, deploy/compose.yaml), as far as a machine without a
container engine can test it: the image is built the way the issue asks (multi-stage, slim, no
build tools or pip in the final stage, an unprivileged user), compose runs Postgres with pgvector,
the migration once, two web processes and four workers from that one image, and each service's
command, given to the image's entry point, runs as a process here against a real database: the
migration exits 0, the web process answers /readyz and the image's health check, and a worker
runs until SIGTERM and then exits 0."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
COMPOSE = ROOT / "deploy" / "compose.yaml"
BIN = Path(sys.executable).parent


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per Dockerfile instruction, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    lines = [line.strip() for line in joined.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def final_stage() -> list[tuple[str, str]]:
    steps = instructions(DOCKERFILE.read_text())
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def entry_point() -> list[str]:
    entry = dict(final_stage())["ENTRYPOINT"]
    return list(yaml.safe_load(entry))  # exec form: a JSON array, which YAML reads too


def test_the_image_is_multi_stage_slim_and_unprivileged_with_no_build_tools() -> None:
    steps = instructions(DOCKERFILE.read_text())
    stages = [args for op, args in steps if op == "FROM"]
    assert len(stages) >= 2 and all("slim" in stage for stage in stages)
    final = final_stage()
    runs = " ".join(args for op, args in final if op == "RUN")
    for tool in ("apt-get install", "gcc", "build-essential", "make ", "pip install"):
        assert tool not in runs, tool
    assert "pip uninstall" in runs  # no installer left in the image
    copies = [args for op, args in final if op == "COPY"]
    assert copies and all(args.startswith("--from=build") for args in copies)  # no sources
    user = [args for op, args in final if op == "USER"]
    assert user and user[-1] not in ("root", "0")
    assert entry_point() == ["resolveflow"]
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[1:2] == ["*"] or "*" in ignored  # the build context is an allowlist


def test_compose_runs_postgres_the_migration_two_web_processes_and_four_workers() -> None:
    services = compose()["services"]
    assert "pgvector" in services["postgres"]["image"]
    roles = {name: services[name] for name in ("migrate", "web", "worker")}
    assert {s["image"] for s in roles.values()} == {"resolveflow:latest"}
    assert roles["migrate"]["command"] == ["db", "upgrade"]
    assert roles["migrate"]["restart"] == "no"
    for name in ("web", "worker"):
        assert roles[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
    assert roles["web"]["deploy"]["replicas"] == 2
    assert roles["worker"]["deploy"]["replicas"] == 4
    assert all(port.startswith("127.0.0.1:") for port in roles["web"]["ports"])
    url = roles["web"]["environment"]["RESOLVEFLOW_DATABASE_URL"]
    assert "${POSTGRES_PASSWORD:?" in url  # no default password


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def service_env(name: str, database_url: str, home: Path) -> dict[str, str]:
    """The service's environment from compose, with this test's database and nothing unset
    filled in (``${VAR:-}`` is empty, which the settings read as unset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    for key, value in compose()["services"][name]["environment"].items():
        env[key] = "" if "${" in str(value) else str(value)
    env["RESOLVEFLOW_DATABASE_URL"] = database_url
    env["RESOLVEFLOW_HOME"] = str(home)
    env["RESOLVEFLOW_EMBEDDER"] = "fake"  # no model load: this test is about the processes
    return env


def command(name: str) -> list[str]:
    program, *rest = entry_point() + compose()["services"][name]["command"]
    return [str(BIN / program), *rest]


def test_each_services_command_runs_on_the_images_entry_point(
    database_url: str, tmp_path: Path
) -> None:
    migrate = subprocess.run(
        command("migrate"),
        env=service_env("migrate", database_url, tmp_path / "m"),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert migrate.returncode == 0, migrate.stderr

    port = free_port()
    web_argv = command("web")
    # Servers in tests listen on loopback only: the image's 0.0.0.0 becomes 127.0.0.1 here.
    web_argv[web_argv.index("--host") + 1] = "127.0.0.1"
    web_argv[web_argv.index("--port") + 1] = str(port)
    web = subprocess.Popen(
        web_argv, env=service_env("web", database_url, tmp_path / "w"), stdin=subprocess.DEVNULL
    )
    worker = subprocess.Popen(
        command("worker"),
        env=service_env("worker", database_url, tmp_path / "k"),
        stdin=subprocess.DEVNULL,
    )
    try:
        ready = wait_for(f"http://127.0.0.1:{port}/readyz", web)
        assert ready == 200
        health = next(args for op, args in final_stage() if op == "HEALTHCHECK")
        probe = yaml.safe_load(health.split("CMD", 1)[1].strip())
        probe = [part.replace(":8000/", f":{port}/") for part in probe]
        assert subprocess.run(probe, timeout=30).returncode == 0  # the image's own check
        time.sleep(2)
        assert worker.poll() is None, "the worker stopped on its own"
    finally:
        for process in (worker, web):
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=60) for process in (worker, web)]
    assert codes == [0, 0]


def wait_for(url: str, process: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the web process exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                status: int = response.status
                return status
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"{url} did not answer")
