"""OnnxMiniLM: all-MiniLM-L6-v2 on ONNX Runtime int8, shipped in the package, without torch."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from resolveflow.adapters.embedder.local import LocalMiniLM
from resolveflow.adapters.embedder.onnx_minilm import DIMENSIONS, MODEL_DIR, OnnxMiniLM
from resolveflow.errors import ConfigError

# Written for these tests (not taken from any data set): short and long issue-like texts.
TEXTS = [
    "Crash when opening a project with an empty settings file",
    "TypeError: 'NoneType' object is not subscriptable in load_dataset",
    "Add support for streaming parquet files from S3",
    "The login page renders blank in Firefox after the last update",
    "Memory usage grows without bound during long ingest runs",
    "Docs: the install section still mentions Python 3.7",
    "Timeout connecting to the database on startup under load",
    "Feature request: export search results as CSV",
    "Segfault in libxml2 when parsing a malformed feed",
    "Keyboard shortcut Ctrl+Shift+T does not reopen the closed tab",
    "Unicode filenames are mangled when uploading attachments",
    "Slow query on the issues list page with 100k rows",
    "Allow configuring the retry count for webhook deliveries",
    "Spelling mistake in the error message for invalid tokens",
    "Tests fail on Windows because of path separators",
    "The scheduler runs the nightly job twice after a DST change",
    "How do I rotate the API key without downtime?",
    "Dark mode: code blocks are unreadable",
    "Regression: CSV import drops the last row",
    "Add a --dry-run flag to the migrate command",
    "Mail with attachments larger than 10 MB is silently dropped",
    "Calendar invites show the wrong time zone",
    "KubePodCrashLooping: pod api-7f9 is restarting repeatedly",
    "Disk almost full on node worker-3, 95% used",
    "Prometheus target down for the payments service",
    "Certificate for api.example.com expires in 7 days",
    "High latency on the search endpoint p95 above 2 seconds",
    "OOMKilled container in the batch namespace",
    "The bookmark manager freezes when sorting 5,000 bookmarks",
    "Print preview cuts off the right margin on A4 paper",
    "Add type hints to the public API",
    "Deprecation warning from numpy when casting to float",
    "Pagination links are broken on the second page",
    "Password reset email never arrives for Gmail addresses",
    "Cannot build from source with gcc 14: implicit declaration error",
    "Make the default batch size configurable",
    "Race condition in the cache invalidation on concurrent writes",
    "Screen reader does not announce the new message count",
    "Support HTTP/2 in the proxy",
    "Remove the unused legacy exporter module",
    "",
    "a",
    "🚀 emoji in titles break the label parser",
    "Der Export schlägt fehl, wenn der Dateiname Umlaute enthält",
    'Stack trace:\n  File "app.py", line 10, in main\n    run()\nValueError: bad input',
    " ".join(["The upload fails with a 502 from the gateway after about thirty seconds."] * 12),
    " ".join(["Steps: open settings, change the proxy, restart; expected it to persist."] * 8),
    "\n".join(
        f"line {i}: java.lang.NullPointerException at Foo.bar(Foo.java:{i})" for i in range(40)
    ),
    "Short",
    "Why is the build red on main?",
]


@pytest.fixture(scope="module")
def onnx() -> OnnxMiniLM:
    return OnnxMiniLM()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.sum(a * b, axis=1))


def test_vectors_are_384_wide_unit_float32(onnx: OnnxMiniLM) -> None:
    vectors = onnx.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), DIMENSIONS) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert onnx.embed_query("one text").shape == (DIMENSIONS,)
    assert onnx.embed_documents([]).shape == (0, DIMENSIONS)


def test_deterministic(onnx: OnnxMiniLM) -> None:
    assert np.array_equal(onnx.embed_documents(TEXTS), onnx.embed_documents(TEXTS))


def test_a_texts_vector_does_not_depend_on_the_texts_embedded_with_it(onnx: OnnxMiniLM) -> None:
    # Activations are quantized with one scale per run; run in a batch, a text's vector moved
    # with its neighbours and their padding (median cosine 0.993, "" 0.967). One text per run:
    # the same vector alone, in any company, in any order, and as a query.
    together = onnx.embed_documents(TEXTS)
    alone = np.stack([onnx.embed_query(text) for text in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    backward = onnx.embed_documents(TEXTS[::-1])[::-1]
    np.testing.assert_allclose(together, backward, atol=1e-6)
    long_company = onnx.embed_documents([TEXTS[0], max(TEXTS, key=len)])
    np.testing.assert_allclose(long_company[0], alone[0], atol=1e-6)
    assert cosines(together, np.roll(together, 1, axis=0)).min() < 0.9


def test_texts_run_side_by_side_give_the_same_vectors_in_the_same_order() -> None:
    # Parallel runs over one session: the same bytes as one at a time, each row its own text.
    one_at_a_time = OnnxMiniLM(threads=1).embed_documents(TEXTS)
    side_by_side = OnnxMiniLM(threads=3).embed_documents(TEXTS)
    assert np.array_equal(one_at_a_time, side_by_side)


def test_truncates_at_128_tokens(onnx: OnnxMiniLM) -> None:
    # "x" is one word piece: 126 of them plus [CLS] and [SEP] fill the 128 tokens, so what
    # follows is cut; with 100 the tails are read and the vectors differ.
    def pair(prefix: int) -> np.ndarray:
        head = " ".join(["x"] * prefix)
        return onnx.embed_documents(
            [f"{head} printer driver crashes", f"{head} weather forecast tomorrow"]
        )

    cut = pair(126)
    assert np.array_equal(cut[0], cut[1])
    kept = pair(100)
    assert float(kept[0] @ kept[1]) < 0.999


def test_empty_text_is_a_unit_vector_like_the_torch_path(onnx: OnnxMiniLM) -> None:
    # sentence-transformers embeds "" as [CLS] [SEP]; so does the tokenizer here.
    vector = onnx.embed_query("")
    assert np.isfinite(vector).all()
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_missing_model_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model\.int8\.onnx is missing"):
        OnnxMiniLM(model_dir=tmp_path).embed_query("text")


def test_space_is_not_the_torch_paths() -> None:
    # No ONNX int8 build agrees with torch int8 to cosine 0.99 (docs/retrieval.md), so an
    # index made by one must be rebuilt for the other.
    space = OnnxMiniLM().space
    assert space != LocalMiniLM().space
    assert space.dimensions == DIMENSIONS and space.provider == "local"


def test_shipped_files_match_their_checksums() -> None:
    listed = (MODEL_DIR / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    names = set()
    for line in listed:
        digest, name = line.split("  ")
        names.add(name)
        assert hashlib.sha256((MODEL_DIR / name).read_bytes()).hexdigest() == digest, name
    assert names == {"model.int8.onnx", "tokenizer.json", "LICENSE"}
    assert "Apache License" in (MODEL_DIR / "LICENSE").read_text(encoding="utf-8")


def test_imports_neither_torch_nor_transformers() -> None:
    script = (
        "import sys\n"
        "from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM\n"
        "vector = OnnxMiniLM().embed_query('hello world')\n"
        "assert vector.shape == (384,)\n"
        "loaded = sorted(m for m in ('torch', 'transformers', 'sentence_transformers')"
        " if m in sys.modules)\n"
        "print(','.join(loaded) or 'none')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "none", done.stdout + done.stderr


def test_agrees_with_the_float_torch_model() -> None:
    # The int8 model against the model it was quantized from (torch, float32) on built-in texts.
    pytest.importorskip("sentence_transformers")
    reference = LocalMiniLM(quantize=False).embed_documents(TEXTS)
    found = cosines(OnnxMiniLM().embed_documents(TEXTS), reference)
    assert found.min() > 0.97
    assert float(np.median(found)) > 0.99
