"""The README's commands run as written, in order, on a fresh home.

Every ```bash block of README.md after the first is run, verbatim and in order, by one bash
process with ``set -euo pipefail``: the install block, then the quickstart against the sandbox
forge (``resolveflow sandbox start``), on an embedded Postgres in a fresh ``RESOLVEFLOW_HOME``.
The first block holds the two opening commands: ``./scripts/test`` is the command CI itself runs
(a test cannot run it without running itself), and ``./scripts/demo`` serves until Ctrl-C, so
``test_readme_demo_command`` runs it as written, waits for the inbox and interrupts it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from resolveflow.store.embedded import stop_embedded_database

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
OPENING = ["./scripts/demo", "./scripts/test"]
QUICKSTART_TIMEOUT = 600
DEMO_TIMEOUT = 420
STOP_SECONDS = 150  # the demo's shutdown after Ctrl-C, on a stalled machine (test_demo.py)


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    text: str


def bash_blocks(markdown: str) -> list[Block]:
    blocks: list[Block] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```bash":
            start = index
            index += 1
            body: list[str] = []
            while lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            blocks.append(Block(start + 1, "\n".join(body)))
        index += 1
    return blocks


def commands(block: Block) -> list[str]:
    """The command words of a block: each line's text before its comment."""
    return [
        line.split("#")[0].strip() for line in block.text.splitlines() if line.split("#")[0].strip()
    ]


def scrubbed_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    # The README's own shell: the checkout's .venv is activated by the install block itself.
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT / ".venv"))
    )
    env.pop("VIRTUAL_ENV", None)
    env.update(RESOLVEFLOW_HOME=str(home), COLUMNS="200", HOME=str(home / "user"))
    return env


def test_the_readme_opens_with_the_two_commands() -> None:
    blocks = bash_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 3, "the README lost its install and quickstart blocks"
    assert commands(blocks[0]) == OPENING
    assert blocks[0].line <= 5, "the two commands must open the README"


@pytest.mark.timeout(QUICKSTART_TIMEOUT + 120)
def test_every_readme_block_runs_as_written(tmp_path: Path) -> None:
    blocks = bash_blocks(README.read_text(encoding="utf-8"))[1:]
    home = tmp_path / "home"
    (home / "user").mkdir(parents=True)
    script = ["set -euo pipefail"]
    for block in blocks:
        script.append(f"echo '>>> README.md line {block.line}' >&2")
        script.append(block.text)
    script.append("echo '>>> all blocks ran' >&2")
    env = scrubbed_env(home)
    try:
        result = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=QUICKSTART_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    finally:
        _stop_sandbox(env)
        stop_embedded_database(home)
    failed_at = re.findall(r">>> README.md line (\d+)", result.stderr)
    where = f"README.md line {failed_at[-1]}" if failed_at else "before the first block"
    assert result.returncode == 0, (
        f"{where} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    assert ">>> all blocks ran" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    # Both approvals ended on the forge: the proposal's page and the run's approval print the link.
    posted = set(re.findall(r"/sandbox/widgets/issues/(\d+)#issuecomment-\d+", result.stdout))
    assert posted == {"1", "7"}, result.stdout[-3000:]


def _stop_sandbox(env: dict[str, str]) -> None:
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "resolveflow"), "sandbox", "stop"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.mark.timeout(DEMO_TIMEOUT + 120)
def test_readme_demo_command(tmp_path: Path) -> None:
    """``./scripts/demo`` as written: it installs, prints the inbox URL, serves it, stops on Ctrl-C."""
    home = tmp_path / "home"
    (home / "user").mkdir(parents=True)
    env = scrubbed_env(home)
    process = subprocess.Popen(
        [OPENING[0]],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    try:
        url = _wait_for_inbox_url(process, seen)
        page = httpx.get(url, timeout=10, follow_redirects=True)
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        try:
            rest, _ = process.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            rest, _ = process.communicate()
        seen.append(rest or "")
    output = "".join(seen)
    assert "Traceback" not in output, output[-3000:]
    assert process.returncode in (0, 130), output[-3000:]


def _wait_for_inbox_url(process: subprocess.Popen[str], seen: list[str]) -> str:
    deadline = time.monotonic() + DEMO_TIMEOUT
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            pytest.fail("the demo ended before printing the inbox URL:\n" + "".join(seen)[-3000:])
        seen.append(line)
        found = re.search(r"(http://127\.0\.0\.1:\d+/\S*)", line)
        if found and "inbox" in line.lower():
            return found.group(1)
    pytest.fail("no inbox URL within the time limit:\n" + "".join(seen)[-3000:])
