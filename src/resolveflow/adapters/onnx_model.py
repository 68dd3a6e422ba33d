"""A model shipped inside the package, run on ONNX Runtime on the CPU with its ``tokenizer.json``:
what the embedder (``embedder/onnx_minilm.py``) and the re-ranker (``reranker/onnx_msmarco.py``)
open alike. Neither torch nor transformers is imported."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resolveflow.errors import ConfigError


@dataclass(frozen=True)
class OnnxModel:
    tokenizer: Any  # tokenizers.Tokenizer (its stubs are partial)
    session: Any  # onnxruntime.InferenceSession (untyped)


def open_model(
    model_path: Path, tokenizer_path: Path, *, max_tokens: int, missing: str
) -> OnnxModel:
    """The session and the tokenizer, which truncates at ``max_tokens`` and never pads (each
    input runs alone); ``missing`` ends the one-line error for a file that is not there."""
    for path in (model_path, tokenizer_path):
        if not path.is_file():
            raise ConfigError(f"{path.name} is missing at {path}; {missing}")
    try:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - an incomplete installation
        raise ConfigError(
            f"a local model needs onnxruntime and tokenizers installed ({exc.name} is missing)"
        ) from exc
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    # A shipped tokenizer.json may pad every text to a fixed length; an input runs alone, unpadded.
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()
    options = ort.SessionOptions()
    # One core per run; inputs run side by side instead: a short input's matrices are too small
    # to share between cores well.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # No spinning between runs (as OMP_WAIT_POLICY=PASSIVE for torch), should a future setting
    # give a run more than one thread: idle threads would take the cores from the Postgres
    # backend the same process waits on next.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    session = ort.InferenceSession(
        str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return OnnxModel(tokenizer=tokenizer, session=session)
