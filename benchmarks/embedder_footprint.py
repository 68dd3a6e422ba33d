"""Embedder footprint benchmark (opt-in, not part of the test suite).

    python benchmarks/embedder_footprint.py [--texts 1000] [--repeats 3] [--batch-size 16]
                                            [--variants DIR,DIR] [--venv .venv]

Embeds the same N real texts (title and body of hf-datasets issues and SeaMonkey reports from
shared/data beside the checkout, half from each) in one run, with the current torch int8 path
(``LocalMiniLM()``) and with ONNX Runtime int8 (``OnnxMiniLM``, the model shipped in the package),
batch 16, on every core of this machine. Prints texts/s (median of the repetitions, after a
warm-up that loads the model) next to the target (ONNX >= torch int8), and the agreement of the
ONNX vectors with torch int8 and torch fp32 (cosine per text: min, p1, p5, median; the space is
kept when p1 >= 0.99). ``--variants`` adds other builds of the ONNX model (directories written by
``scripts/build_onnx_embedder.py --out DIR``) to the same table. ``--venv DIR`` prints the size of
that directory (as ``du`` counts it) next to the 600 MB target for a default install.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--variants", default="", help="comma-separated ONNX model directories")
    parser.add_argument("--venv", type=Path, help="print this directory's size against 600 MB")
    args = parser.parse_args()
    texts = real_texts(args.texts)
    print(f"{len(texts)} real texts, batch {args.batch_size}, {os.cpu_count()} cores")
    batch = args.batch_size
    embedders: dict[str, Embedder] = {
        "torch int8 (current)": LocalMiniLM(batch_size=batch),
        "onnx int8 (shipped)": OnnxMiniLM(batch_size=batch),
    }
    for directory in filter(None, args.variants.split(",")):
        embedders[f"onnx {Path(directory).name}"] = OnnxMiniLM(
            batch_size=batch, model_dir=Path(directory)
        )
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
    if args.venv:
        size = directory_mb(args.venv)
        print(
            f"venv {args.venv}: {size:.0f} MB, target <= {VENV_TARGET_MB:.0f} MB  "
            f"{'yes' if size <= VENV_TARGET_MB else 'NO'}"
        )


if __name__ == "__main__":
    main()
