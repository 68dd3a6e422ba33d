"""How long a CLI command takes, start to exit, with the embedded Postgres already running.

    python benchmarks/cli_startup.py --runs 20 [--home DIR]

Starts the embedded database once in this process (so every command joins a running server, as
on a machine where the worker or the web app is up), prepares a tenant, a principal and one
proposal through the CLI itself, then runs each measured command ``--runs`` times as a fresh
``python -m resolveflow`` subprocess and prints the median and p90 wall time next to the target
(issue 12: ``--help`` <= 0.3 s, ``tenants list`` and ``proposals show ID`` <= 0.6 s, medians).

The bare interpreter's start (``python -c pass`` with the same interpreter, run just before each
measured command, so under the same load) is printed first, and each command's median also as
"interpreter + X s": on a busy machine both grow, and the difference is the command's own cost.

Commands start from cached bytecode, as an installed ``resolveflow`` does (pip compiles it on
install): the cache lives in the benchmark's home (``PYTHONPYCACHEPREFIX``), so the source tree
gets no ``__pycache__``, and each command runs once untimed to fill it. ``--compile-each-start``
keeps an inherited ``PYTHONDONTWRITEBYTECODE`` instead, and every start compiles our modules
from source again (tens of milliseconds more for ``tenants list``, more for bigger commands).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from resolveflow.store.embedded import embedded_database_url

TARGETS = {"--help": 0.3, "tenants list": 0.6, "proposals show ID": 0.6}


def environment(home: Path, *, compile_each_start: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env["RESOLVEFLOW_HOME"] = str(home)
    if not compile_each_start:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    return env


def cli(env: dict[str, str], *args: str) -> str:
    return run(env, "-m", "resolveflow", *args)


def run(env: dict[str, str], *args: str) -> str:
    """``python ARGS`` with this interpreter; its stdout, or exit with its stderr on failure."""
    done = subprocess.run(
        [sys.executable, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise SystemExit(f"python {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def prepare(env: dict[str, str]) -> str:
    """A tenant, an allowed repository, a principal and one proposal; returns the proposal id.
    The first command also applies the migrations, so no measured run pays for them."""
    cli(env, "tenants", "add", "bench", "--json")
    cli(env, "repos", "add", "bench/cli", "--json")
    made = json.loads(
        cli(env, "principals", "add", "--subject", "rita", "--role", "requester", "--json")
    )
    env["RESOLVEFLOW_TOKEN"] = made["token"]
    proposal = json.loads(
        cli(
            env,
            "proposals",
            "create",
            "--repo",
            "bench/cli",
            "--issue",
            "1",
            "--comment",
            "Thanks for the report.",
            "--json",
        )
    )
    return str(proposal["id"])


def timed(env: dict[str, str], args: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall times of ``python ARGS``, ``runs`` times, and of ``python -c pass`` run just before
    each of them: the interpreter's own start under the same load."""
    samples: list[float] = []
    bare: list[float] = []
    for _ in range(runs):
        for into, argv in ((bare, ["-c", "pass"]), (samples, args)):
            started = time.perf_counter()
            run(env, *argv)
            into.append(time.perf_counter() - started)
    return samples, bare


def p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10, method="inclusive")[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--home", type=Path, help="Keep the database here (default: a temp dir).")
    parser.add_argument(
        "--compile-each-start",
        action="store_true",
        help="No bytecode cache when PYTHONDONTWRITEBYTECODE is set (see above).",
    )
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="resolveflow-cli-bench-"))
    try:
        embedded_database_url(home)  # held by this process until it exits
        env = environment(home, compile_each_start=args.compile_each_start)
        proposal_id = prepare(env)
        commands = {
            "--help": ["--help"],
            "tenants list": ["tenants", "list"],
            "proposals show ID": ["proposals", "show", proposal_id],
        }
        for argv in commands.values():  # fills the bytecode cache (untimed)
            cli(env, *argv)
        results = {
            name: timed(env, ["-m", "resolveflow", *argv], args.runs)
            for name, argv in commands.items()
        }
        cached = "PYTHONDONTWRITEBYTECODE" not in env
        print(f"bytecode: {'cached' if cached else 'compiled at every start'}")
        bare = [
            sample for _, interpreter_samples in results.values() for sample in interpreter_samples
        ]
        interpreter = statistics.median(bare)
        print(
            f"{'command':<20} {'median':>8} {'p90':>8} {'target':>8}  met  beside the interpreter"
        )
        print(f"{'python -c pass':<20} {interpreter:>7.3f}s {p90(bare):>7.3f}s")
        for name, (samples, _) in results.items():
            median, target = statistics.median(samples), TARGETS[name]
            print(
                f"{name:<20} {median:>7.3f}s {p90(samples):>7.3f}s {target:>7.1f}s  "
                f"{'yes' if median <= target else 'NO ':<4} "
                f"interpreter + {median - interpreter:.3f} s"
            )
    finally:
        if args.home is None:
            from resolveflow.store.embedded import stop_embedded_database

            stop_embedded_database(home)
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
