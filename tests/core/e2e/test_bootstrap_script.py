"""``scripts/bootstrap`` says what it installs and how long it may take, shows a line per package,
and says so when there is nothing to install; run for real on a virtual environment of its own
whose ``pip`` is a stand-in that prints what pip prints (no package is installed here)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BOOTSTRAP = ROOT / "scripts" / "bootstrap"

PIP_SAYS = """\
Looking in links: /opt/wheels
Obtaining file:///checkout
  Installing build dependencies: started
Collecting fastapi>=0.115 (from resolveflow==0.1.0)
  Using cached fastapi-0.118.0-py3-none-any.whl (97 kB)
Collecting pydantic>=2.7 (from resolveflow==0.1.0)
  Downloading pydantic-2.11.9-py3-none-any.whl (444 kB)
Collecting typing-extensions>=4.8 (from fastapi>=0.115->resolveflow==0.1.0)
Requirement already satisfied: pip in ./venv/lib/python3.11/site-packages
Installing collected packages: typing-extensions, pydantic, fastapi, resolveflow
Successfully installed fastapi-0.118.0 pydantic-2.11.9 resolveflow-0.1.0
"""


def _venv(tmp_path: Path, pip_exit: int = 0) -> Path:
    """A virtual environment's shape: its python is this one, its pip prints ``PIP_SAYS``."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    said = tmp_path / "pip-says.txt"
    said.write_text(PIP_SAYS)
    pip = venv / "bin" / "pip"
    pip.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/pip-args\ncat {said}\nexit {pip_exit}\n')
    pip.chmod(0o755)
    return venv


def _stamp(venv: Path) -> Path:
    both = (ROOT / "pyproject.toml").read_bytes() + (ROOT / "constraints.txt").read_bytes()
    return venv / f".resolveflow-installed-{hashlib.sha256(both).hexdigest()[:16]}-base"


def _bootstrap(venv: Path) -> subprocess.CompletedProcess[str]:
    # No uv on the PATH, so that the script takes its pip (the stand-in) on any machine.
    path = [d for d in os.environ["PATH"].split(":") if d and not (Path(d) / "uv").exists()]
    env = {"PATH": ":".join(path), "HOME": os.environ.get("HOME", "/tmp")}
    env["RESOLVEFLOW_VENV"] = str(venv)
    return subprocess.run(
        [str(BOOTSTRAP)], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_first_install_says_what_and_how_long_then_a_line_per_package(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    result = _bootstrap(venv)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    opening = " ".join(lines[: next(i for i, line in enumerate(lines) if "[1]" in line)])
    assert "installing ResolveFlow and its dependencies" in opening, opening
    assert str(venv) in opening and "minute" in opening and "500 MB" in opening, opening
    assert [line.strip() for line in lines if line.lstrip().startswith("[")] == [
        "[1] fastapi>=0.115",
        "[2] pydantic>=2.7",
        "[3] typing-extensions>=4.8",
    ]
    assert not [line for line in lines if "Using cached" in line or "Requirement" in line]
    assert lines[-1].startswith(f"bootstrap: ResolveFlow is installed in {venv}, in "), lines
    assert "-c constraints.txt -e ." in (tmp_path / "pip-args").read_text()
    assert _stamp(venv).exists()
    assert "Successfully installed" in (venv / "install.log").read_text()


def test_a_complete_environment_is_said_to_need_nothing(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    _stamp(venv).touch()
    result = _bootstrap(venv)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"bootstrap: ResolveFlow is already installed in {venv}; nothing to install\n"
    )
    assert not (tmp_path / "pip-args").exists()


def test_a_failed_install_shows_the_end_of_pips_output_and_fails(tmp_path: Path) -> None:
    venv = _venv(tmp_path, pip_exit=1)
    result = _bootstrap(venv)
    assert result.returncode == 1
    assert f"bootstrap: the install failed; the end of {venv}/install.log:" in result.stderr
    assert "Requirement already satisfied: pip" in result.stderr  # the log's end, in full
    assert not _stamp(venv).exists()
