"""Embedder footprint benchmark (opt-in, not part of the test suite).

    python benchmarks/embedder_footprint.py [--texts 1000] [--repeats 3] [--batch-size 16]
                                            [--variants DIR,DIR] [--venv .venv]

Embeds the same N real texts (title and body of hf-datasets issues and SeaMonkey reports from
shared/data beside the checkout, half from each) in one run, with the current torch int8 path
(``LocalMiniLM()``) and with ONNX Runtime int8 (``OnnxMiniLM``, the model shipped in the package),
each as the product runs it (int8: one text per run, so that a vector does not depend on its batch;
``--batch-size`` is the float torch reference's batch), on every core of this machine. Prints
texts/s (median of the repetitions, after a warm-up that loads the model) next to the target (ONNX
>= torch int8), and the agreement of the ONNX vectors with torch int8 and torch fp32 (cosine per
text: min, p1, p5, median; the space is kept when p1 >= 0.99). ``--variants`` adds other builds of
the ONNX model (directories written by ``scripts/build_onnx_embedder.py --out DIR``) to the same
table. ``--venv DIR`` prints the size of that directory (as ``du`` counts it) next to the 600 MB
target for a default install.

``--first-run`` does what a new user does: clones this checkout's HEAD into a temporary directory,
runs ``./scripts/demo`` there (install, then the demo) with a clean environment, and prints the
time until the inbox URL appears (target <= 120 s on a quiet 2-core machine with a warm package
cache) and the size of the ``.venv`` that install made (target <= 600 MB); then stops the demo and
removes the clone. ``--skip-embedders`` prints only that.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from resolveflow.adapters.embedder.local import LocalMiniLM
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.adapters.embedder.protocol import Embedder, Vectors

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SOURCES = (DATA / "hf-datasets" / "issues.jsonl", DATA / "seamonkey" / "corpus.jsonl")
AGREEMENT_TARGET = 0.99
VENV_TARGET_MB = 600.0
FIRST_RUN_TARGET_S = 120.0
FIRST_RUN_LIMIT_S = 900.0  # gives up after this: a first run that long has failed its target anyway
CHECKOUT = Path(__file__).resolve().parents[1]
INBOX_LINE = re.compile(r"^Inbox: (http://127\.0\.0\.1:\d+/inbox)$")


def real_texts(count: int) -> list[str]:
    per_source = []
    for path in SOURCES:
        if not path.exists():
            raise SystemExit(f"needs {path} (shared/data beside the checkout)")
        with path.open(encoding="utf-8") as lines:
            records = (json.loads(line) for line in lines if line.strip())
            texts = (f"{r['title']}\n\n{r.get('body') or ''}".strip() for r in records)
            per_source.append(list(itertools.islice(texts, (count + 1) // len(SOURCES))))
    # Interleave so a prefix of the list is still a mix of both sources.
    mixed = [t for pair in itertools.zip_longest(*per_source) for t in pair if t is not None]
    return mixed[:count]


def throughputs(
    embedders: dict[str, Embedder], texts: list[str], repeats: int
) -> dict[str, tuple[float, Vectors]]:
    """Median texts/s per embedder; repetitions interleave so load from elsewhere hits all alike."""
    for embedder in embedders.values():
        embedder.embed_documents(texts[:16])  # loads the model; not timed
    rates: dict[str, list[float]] = {name: [] for name in embedders}
    vectors: dict[str, Vectors] = {}
    for _ in range(repeats):
        for name, embedder in embedders.items():
            started = time.perf_counter()
            vectors[name] = embedder.embed_documents(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
    return {name: (statistics.median(rates[name]), vectors[name]) for name in embedders}


def agreement(a: Vectors, b: Vectors) -> dict[str, float]:
    cosines = np.sum(a * b, axis=1)
    return {
        "min": float(cosines.min()),
        "p1": float(np.percentile(cosines, 1)),
        "p5": float(np.percentile(cosines, 5)),
        "median": float(np.median(cosines)),
    }


def row(reference: str, figures: dict[str, float]) -> str:
    return f"{reference:<10} " + " ".join(
        f"{figures[k]:>6.4f}" for k in ("min", "p1", "p5", "median")
    )


def directory_mb(path: Path) -> float:
    """Allocated size, as ``du -s`` counts it (hard links once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            stat = os.lstat(os.path.join(root, name))
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total / 1e6


def first_run() -> tuple[float, float]:
    """Seconds from ``./scripts/demo`` in a fresh clone to the inbox URL, and the clone's venv MB."""
    with tempfile.TemporaryDirectory(prefix="resolveflow-first-run-") as scratch:
        clone = Path(scratch) / "resolveflow"
        subprocess.run(["git", "clone", "--quiet", str(CHECKOUT), str(clone)], check=True)
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("RESOLVEFLOW_", "VIRTUAL_"))
        }
        env["RESOLVEFLOW_HOME"] = str(Path(scratch) / "home")
        env["PYTHONUNBUFFERED"] = "1"  # the URL line as soon as it is printed, not at exit
        started = time.perf_counter()
        demo = subprocess.Popen(
            ["./scripts/demo"],
            cwd=clone,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # the demo's own children stop with it
        )
        try:
            elapsed = _until_inbox(demo, started)
        finally:
            os.killpg(demo.pid, signal.SIGINT)
            try:
                demo.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(demo.pid, signal.SIGKILL)
                demo.wait()
        return elapsed, directory_mb(clone / ".venv")


def _until_inbox(demo: subprocess.Popen[str], started: float) -> float:
    assert demo.stdout is not None
    for line in demo.stdout:
        if INBOX_LINE.match(line.strip()):
            return time.perf_counter() - started
        if time.perf_counter() - started > FIRST_RUN_LIMIT_S:
            break
    raise SystemExit(f"the demo did not show its inbox URL (exit {demo.poll()})")


def print_first_run() -> None:
    seconds, venv_mb = first_run()
    print(
        f"first run (fresh clone, ./scripts/demo to the inbox URL): {seconds:.0f} s, "
        f"target <= {FIRST_RUN_TARGET_S:.0f} s  {'yes' if seconds <= FIRST_RUN_TARGET_S else 'NO'}"
    )
    print(
        f"venv of that default install: {venv_mb:.0f} MB, target <= {VENV_TARGET_MB:.0f} MB  "
        f"{'yes' if venv_mb <= VENV_TARGET_MB else 'NO'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--variants", default="", help="comma-separated ONNX model directories")
    parser.add_argument("--venv", type=Path, help="print this directory's size against 600 MB")
    parser.add_argument("--first-run", action="store_true", help="time ./scripts/demo in a clone")
    parser.add_argument("--skip-embedders", action="store_true", help="no embedder table")
    args = parser.parse_args()
    if not args.skip_embedders:
        print_embedders(args)
    if args.venv:
        size = directory_mb(args.venv)
        print(
            f"venv {args.venv}: {size:.0f} MB, target <= {VENV_TARGET_MB:.0f} MB  "
            f"{'yes' if size <= VENV_TARGET_MB else 'NO'}"
        )
    if args.first_run:
        print_first_run()


def print_embedders(args: argparse.Namespace) -> None:
    texts = real_texts(args.texts)
    print(
        f"{len(texts)} real texts, one per run (fp32 reference: batch {args.batch_size}), "
        f"{os.cpu_count()} cores"
    )
    batch = args.batch_size
    embedders: dict[str, Embedder] = {
        "torch int8 (current)": LocalMiniLM(batch_size=batch),
        "onnx int8 (shipped)": OnnxMiniLM(),
    }
    for directory in filter(None, args.variants.split(",")):
        embedders[f"onnx {Path(directory).name}"] = OnnxMiniLM(model_dir=Path(directory))
    measured = throughputs(embedders, texts, args.repeats)
    torch_fp32 = LocalMiniLM(quantize=False, batch_size=batch).embed_documents(texts)
    torch_rate, torch_int8 = measured.pop("torch int8 (current)")
    print(
        f"{'embedder':<24} {'texts/s':>8} {'target':>8}  met  {'cosine vs':<10} "
        f"{'min':>6} {'p1':>6} {'p5':>6} {'median':>6}"
    )
    print(
        f"{'torch int8 (current)':<24} {torch_rate:>8.1f} {'':>8}  {'':<3}  "
        + row("torch fp32", agreement(torch_int8, torch_fp32))
    )
    for name, (rate, vectors) in measured.items():
        met = "yes" if rate >= torch_rate else "NO"
        head = f"{name:<24} {rate:>8.1f} {torch_rate:>8.1f}  {met:<3}  "
        close = agreement(vectors, torch_int8)
        verdict = f"  p1>={AGREEMENT_TARGET}: {'yes' if close['p1'] >= AGREEMENT_TARGET else 'NO'}"
        print(head + row("torch int8", close) + verdict)
        print(" " * len(head) + row("torch fp32", agreement(vectors, torch_fp32)))


if __name__ == "__main__":
    main()
