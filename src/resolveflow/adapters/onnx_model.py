"""A model shipped inside the package, run on ONNX Runtime on the CPU with its ``tokenizer.json``:
what the embedder (``embedder/onnx_minilm.py``) and the re-ranker (``reranker/onnx_msmarco.py``)
open and run alike. Neither torch nor transformers is imported."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from resolveflow.errors import ConfigError

logger = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")


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


class LazyModel:
    """``open_model`` on first use, once, under a lock (loading takes about 0.3 s, and most
    processes never need some of their models); ``loaded`` names it in the log with ``details``."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        max_tokens: int,
        missing: str,
        loaded: str,
        details: dict[str, object],
    ) -> None:
        self._open = partial(
            open_model, model_path, tokenizer_path, max_tokens=max_tokens, missing=missing
        )
        self._message = loaded
        self._details = details
        self._model: OnnxModel | None = None
        self._lock = threading.Lock()

    def get(self) -> OnnxModel:
        with self._lock:
            if self._model is None:
                started = time.perf_counter()
                self._model = self._open()
                seconds = round(time.perf_counter() - started, 2)
                logger.info(self._message, extra={**self._details, "seconds": seconds})
            return self._model


def run_each(run: Callable[[T], R], inputs: Sequence[T], threads: int, name: str) -> list[R]:
    """``run`` on each input alone, ``threads`` at a time, in ``inputs``' order. An int8 model
    quantizes activations with one scale per run, so an input run in a batch would get a result
    that depends on its neighbours; alone it is the same wherever it runs (the session is
    thread-safe and ONNX Runtime releases the GIL)."""
    workers = min(threads, len(inputs))
    if workers <= 1:
        return [run(item) for item in inputs]
    with ThreadPoolExecutor(workers, thread_name_prefix=name) as pool:
        return list(pool.map(run, inputs))


def usable_cores() -> int:
    """The cores this process may run on (a container's affinity), not the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
