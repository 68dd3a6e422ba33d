"""A real llama.cpp server (issue 30): ``LlamaCppServer`` runs xllamacpp's server in a child
process on SmolLM2-135M-Instruct, offline on 127.0.0.1. It answers chat completions, holds a
``json_schema`` answer to the schema (maxLength and maxItems included) and stops at
``max_tokens``; a start that fails says why in one line and leaves no process, and so does stop.

The tests that start a server of their own come first: with ``--dist loadfile`` the file runs in
order on one worker, so they are done before the session's server starts (one server at a time).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import openai
import psutil
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from pydantic import BaseModel, ConfigDict, Field

from resolveflow.adapters.llm.llamacpp_server import LlamaCppServer
from resolveflow.llm.errors import ModelUnavailable

pytestmark = [pytest.mark.integration, pytest.mark.real_model]
pytest_plugins = ["fixtures_llamacpp"]

CALL_SECONDS = 120.0  # a 100-token answer takes 5-15 s on two busy cores
# The question invites a long title and many tags: only the schema keeps them short.
QUESTION: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": "You answer in JSON."},
    {
        "role": "user",
        "content": "Write a very long, detailed title for a bug report about the login page "
        "crashing on Safari 17, and ten tags for it.",
    },
]


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(max_length=20)
    tags: list[str] = Field(max_length=2)


def client(server: LlamaCppServer, timeout_seconds: float = CALL_SECONDS) -> openai.OpenAI:
    """An OpenAI client on ``server``; no retries, so a failure shows at once."""
    return openai.OpenAI(
        base_url=server.base_url, api_key=server.api_key, timeout=timeout_seconds, max_retries=0
    )


def children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stop_leaves_no_process(llamacpp_gguf: Path) -> None:
    with LlamaCppServer(llamacpp_gguf, threads=1, n_ctx=512) as server:
        pid = server.pid
        assert pid is not None and not gone(pid)
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        models = client(server, 10).models.list()
        assert [m.id for m in models.data] == [server.model]
    assert gone(pid)
    assert server.pid is None
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url
    server.stop()  # again: nothing left to do


def test_a_missing_gguf_fails_in_one_line_at_once(tmp_path: Path) -> None:
    before = children()
    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as failed:
        LlamaCppServer(tmp_path / "absent.gguf", threads=1).start(30)
    assert time.monotonic() - started < 1
    assert str(failed.value) == f"cannot start llama.cpp: no GGUF file at {tmp_path}/absent.gguf"
    assert children() <= before


def test_a_file_that_is_not_gguf_fails_with_the_servers_reason(
    llamacpp_gguf: Path, tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"not a model\n" * 100)
    before = children()
    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as failed:
        LlamaCppServer(garbage, threads=1).start(60)
    assert time.monotonic() - started < 30
    reason = str(failed.value)
    assert "\n" not in reason
    assert reason.startswith("llama.cpp on garbage.gguf exited with code 1 while starting: ")
    assert "invalid magic characters" in reason
    assert children() <= before


# --- the local provider (RESOLVEFLOW_MODEL_PROVIDER=llamacpp) ------------------------------------


def test_the_local_provider_starts_a_server_for_the_gguf_and_stops_it_with_the_model(
    llamacpp_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from resolveflow.adapters.llm.llamacpp_server import LocalChatModel
    from resolveflow.bootstrap.app import build_model
    from resolveflow.config import Settings
    from resolveflow.llm.messages import ChatMessage
    from resolveflow.llm.protocol import Purpose

    monkeypatch.setenv("RESOLVEFLOW_MODEL_PROVIDER", "llamacpp")
    monkeypatch.setenv("RESOLVEFLOW_MODEL_GGUF", str(llamacpp_gguf))
    monkeypatch.setenv("RESOLVEFLOW_MODEL_THREADS", "1")
    monkeypatch.setenv("RESOLVEFLOW_MODEL_CONTEXT_TOKENS", "2048")
    model = build_model(Settings())
    assert isinstance(model, LocalChatModel)
    pid = model.server.pid
    try:
        assert (model.provider, model.model) == ("llamacpp", llamacpp_gguf.stem)
        said = model.text([ChatMessage("user", "Say hello.")], purpose=Purpose.CRITIQUE)
        assert said.value.strip() and said.served_model
        assert said.usage.completion_tokens is not None
        assert said.usage.completion_tokens <= model.max_tokens(Purpose.CRITIQUE)
    finally:
        model.close()
    assert (pid is not None and not psutil.pid_exists(pid)) or psutil.Process(
        pid
    ).status() == "zombie"


@pytest.mark.parametrize(
    ("gguf", "message"),
    [
        (None, "RESOLVEFLOW_MODEL_PROVIDER=llamacpp needs RESOLVEFLOW_MODEL_GGUF (a file)"),
        (
            "/nonexistent/model.gguf",
            "RESOLVEFLOW_MODEL_GGUF: no such file: /nonexistent/model.gguf",
        ),
    ],
)
def test_the_local_provider_without_its_file_is_one_line(
    gguf: str | None, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from resolveflow.bootstrap.app import build_model
    from resolveflow.config import Settings
    from resolveflow.errors import ConfigError

    monkeypatch.setenv("RESOLVEFLOW_MODEL_PROVIDER", "llamacpp")
    if gguf is not None:
        monkeypatch.setenv("RESOLVEFLOW_MODEL_GGUF", gguf)
    with pytest.raises(ConfigError) as raised:
        build_model(Settings())
    assert raised.value.message == message


def test_the_server_answers_a_chat_completion(llamacpp_server: LlamaCppServer) -> None:
    answer = client(llamacpp_server).chat.completions.create(
        model=llamacpp_server.model,
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=20,
        temperature=0,
    )
    [choice] = answer.choices
    assert choice.message.content
    assert answer.usage is not None
    assert 0 < answer.usage.completion_tokens <= 20


def _ask_for_a_report(server: LlamaCppServer, *, max_tokens: int) -> ChatCompletion:
    """The question above, held to ``Report``'s schema, within ``max_tokens``."""
    return client(server).chat.completions.create(
        model=server.model,
        messages=QUESTION,
        max_tokens=max_tokens,
        temperature=0,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "report", "strict": True, "schema": Report.model_json_schema()},
        },
    )


def test_a_json_schema_answer_matches_the_schema_within_max_tokens(
    llamacpp_server: LlamaCppServer,
) -> None:
    answer = _ask_for_a_report(llamacpp_server, max_tokens=100)
    [choice] = answer.choices
    assert choice.finish_reason == "stop"
    assert answer.usage is not None
    assert answer.usage.completion_tokens <= 100
    content = choice.message.content
    assert content is not None
    report = Report.model_validate(json.loads(content))  # maxLength and maxItems held
    assert report.title


def test_max_tokens_cuts_the_answer(llamacpp_server: LlamaCppServer) -> None:
    answer = _ask_for_a_report(llamacpp_server, max_tokens=8)
    [choice] = answer.choices
    assert choice.finish_reason == "length"
    assert answer.usage is not None
    assert answer.usage.completion_tokens == 8
    assert (choice.message.content or "").startswith("{")  # the start of the JSON, cut off
