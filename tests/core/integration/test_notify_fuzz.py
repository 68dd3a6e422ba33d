"""Property-based fuzzing of the notification sender against hostile receivers (Hypothesis): a
receiver on 127.0.0.1 plays a generated answer, cut in random pieces with pauses between them
and a close (or a hang) at the end: status lines valid, odd and garbled; headers huge, folded,
without colons, with NUL and invalid UTF-8; Content-Length and chunked framing that lie; bodies
of up to 40 MB; pauses past the deadline.

Each case may only deliver (and then the answer began with a 2xx status line) or raise
``NotDelivered`` with the one sentence that tells nothing of what answered; it ends within the
deadline and a margin, its peak memory stays bounded (the high-water mark, reset before each
case through ``/proc/self/clear_refs``), and the run leaves neither file descriptors nor memory
behind. The default suite runs 150 cases; the ``fuzz`` tier (``-m fuzz``) runs 10,000 and
prints what they did.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile_http import _read_request
from process_memory import reset_peak, resident_mb, status_mb
from resolveflow.adapters.notify_webhook import NotDelivered, WebhookSender
from resolveflow.domain.network_addresses import AddressPolicy

SMALL, FULL = 150, 10_000
DEADLINE = 0.1  # one delivery's whole deadline in these cases: pauses around it keep a case short
CASE_SECONDS = DEADLINE + 5.0  # the deadline and a loaded machine's margin
MAX_CASE_PEAK_MB = 64  # a case may answer 40 MB: none of it may be read
MAX_GROWTH_MB = 300  # resident after the run (Hypothesis keeps what it learnt)
MAX_FD_GROWTH = 16
NOT_DELIVERED = f"the notification was not delivered (no 2xx answer within {DEADLINE:g} s)"


@pytest.fixture(
    params=[SMALL, pytest.param(FULL, marks=[pytest.mark.fuzz, pytest.mark.timeout(1500)])],
    ids=str,
)
def cases(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Flood:
    megabytes: int  # a body streamed as fast as the client reads


Step = bytes | Pause | Flood


@dataclass(frozen=True)
class Answer:
    steps: tuple[Step, ...]
    hang_seconds: float  # held open this long after the last step, then closed

    @property
    def head(self) -> bytes:
        return b"".join(step for step in self.steps if isinstance(step, bytes))


# --- the answers ---------------------------------------------------------------------------------

NASTY = st.sampled_from([b"\x00", b"\xed\xa0\x80", b"\xff", b"\r", b"\n", b"\r\n", b" ", b":"])
junk = st.one_of(st.binary(max_size=40), NASTY, st.text(max_size=20).map(str.encode))
status_lines = st.one_of(
    st.sampled_from(
        [
            b"HTTP/1.1 200 OK\r\n",
            b"HTTP/1.1 204 No Content\r\n",
            b"HTTP/1.0 200 OK\r\n",
            b"HTTP/1.1 299 Whatever\r\n",
            b"HTTP/1.1 301 Moved\r\n",
            b"HTTP/1.1 401 Unauthorized\r\n",
            b"HTTP/1.1 405 Method Not Allowed\r\n",
            b"HTTP/1.1 500 Oops\r\n",
            b"HTTP/1.1 999 Odd\r\n",
            b"HTTP/1.1 2000 Long\r\n",
            b"HTTP/2 200\r\n",
            b"HTTP/1.1 200\r\n",
            b"-ERR unknown command\r\n",
            b"SSH-2.0-OpenSSH_9.6\r\n",
            b"",
        ]
    ),
    st.builds(
        lambda code, rest: b"HTTP/1.1 %d " % code + rest + b"\r\n", st.integers(0, 1000), junk
    ),
    junk,
)
header_names = st.one_of(
    st.sampled_from(
        [b"Content-Length", b"Transfer-Encoding", b"Location", b"Connection", b"Content-Type"]
    ),
    junk,
)
header_values = st.one_of(
    st.sampled_from([b"chunked", b"close", b"0", b"-1", b"99999999999999999999", b"gzip, chunked"]),
    st.integers(0, 1 << 40).map(lambda n: str(n).encode()),
    junk,
    st.integers(1, 200_000).map(lambda n: b"v" * n),  # past h11's 100 KB for a head
)
header = st.one_of(
    st.builds(lambda n, v: n + b": " + v + b"\r\n", header_names, header_values),
    st.builds(lambda v: b" folded " + v + b"\r\n", junk),  # obs-fold
    junk.map(lambda j: j + b"\r\n"),  # no colon
)
bodies = st.one_of(
    st.just(b""),
    st.binary(max_size=200),
    st.sampled_from([b"5\r\nhello\r\n0\r\n\r\n", b"zz\r\nbroken\r\n", b"ffffffff\r\n", b"0\r\n"]),
)
pieces = st.one_of(
    st.builds(lambda b: (b,), bodies),
    st.builds(lambda mb: (Flood(mb),), st.integers(1, 40)),
)
# most pieces come at once; some after a pause, up to past the whole deadline
pauses = st.one_of(st.just(0.0), st.just(0.0), st.just(0.0), st.floats(0.0, DEADLINE * 1.6))


good_headers = st.lists(
    st.sampled_from(
        [
            b"Content-Length: 0\r\n",
            b"Content-Type: text/plain\r\n",
            b"Connection: close\r\n",
            b"Transfer-Encoding: chunked\r\n",
            b"Server: hooks\r\n",
        ]
    ),
    max_size=3,
)


@st.composite
def heads(draw: st.DrawFn) -> bytes:
    """Half well formed (a 2xx and plain headers, ended), half anything at all."""
    if draw(st.booleans()):
        line = draw(st.sampled_from([b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 204 \r\n"]))
        return line + b"".join(draw(good_headers)) + b"\r\n"
    raw = draw(status_lines) + b"".join(draw(st.lists(header, max_size=6)))
    return raw + b"\r\n" if draw(st.booleans()) else raw  # otherwise it never ends


@st.composite
def answers(draw: st.DrawFn) -> Answer:
    raw = draw(heads())
    steps: list[Step] = []
    while raw:  # the head in random pieces, some with a pause before them
        cut = draw(st.integers(1, max(1, len(raw))))
        if (pause := draw(pauses)) > 0:
            steps.append(Pause(pause))
        steps.append(raw[:cut])
        raw = raw[cut:]
    steps.extend(draw(pieces))
    hang = draw(st.sampled_from([0.0, 0.0, DEADLINE * 2]))
    return Answer(tuple(steps), hang)


# --- the receiver --------------------------------------------------------------------------------


@dataclass(eq=False)
class ScriptedReceiver:
    """Plays ``answer`` to each request it receives."""

    answer: Answer | None = None
    port: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _server: socket.socket = field(default_factory=socket.socket)

    def start(self) -> None:
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self._server.settimeout(0.1)
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self._server.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._play, args=(conn, self.answer), daemon=True).start()

    def _play(self, conn: socket.socket, answer: Answer | None) -> None:
        with conn:
            conn.settimeout(2)
            try:
                _read_request(conn)
                for step in answer.steps if answer else ():
                    if isinstance(step, Pause):
                        time.sleep(step.seconds)
                    elif isinstance(step, Flood):
                        block = b"x" * (1 << 20)
                        for _ in range(step.megabytes):
                            conn.sendall(block)
                    else:
                        conn.sendall(step)
                time.sleep(answer.hang_seconds if answer else 0)
            except OSError:
                return  # the sender gave up and closed: what it should do


@pytest.fixture
def receiver() -> Iterator[ScriptedReceiver]:
    running = ScriptedReceiver()
    running.start()
    yield running
    running.stop()


# --- the property --------------------------------------------------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_fuzzed_receivers_deliver_or_not_in_bounded_time_and_memory(
    cases: int, receiver: ScriptedReceiver
) -> None:
    sender = WebhookSender(
        f"http://127.0.0.1:{receiver.port}/hook",
        timeout_seconds=DEADLINE,
        policy=AddressPolicy.parse("127.0.0.1"),
    )
    ran = Counter[str]()
    slowest, worst = 0.0, 0.0
    before, fds = resident_mb(), _open_fds()

    @settings(
        max_examples=cases, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(answer=answers())
    def one_case(answer: Answer) -> None:
        nonlocal slowest, worst
        receiver.answer = answer
        resident, started = reset_peak(), time.monotonic()
        try:
            sender.send(b'{"text": "fuzz"}')
            ran["delivered"] += 1
            assert answer.head.startswith((b"HTTP/1.1 2", b"HTTP/1.0 2")), answer.head[:80]
        except NotDelivered as exc:
            assert exc.message == NOT_DELIVERED
            ran["not delivered"] += 1
        took, peak = time.monotonic() - started, status_mb("VmHWM:") - resident
        slowest, worst = max(slowest, took), max(worst, peak)
        assert took < CASE_SECONDS, (took, answer.head[:200])
        assert peak < MAX_CASE_PEAK_MB, (peak, answer.head[:200])
        ran["cases"] += 1

    one_case()
    sender.close()
    time.sleep(DEADLINE * 3)  # the receiver's last threads finish their hang
    growth, fd_growth = resident_mb() - before, _open_fds() - fds
    print(
        f"\nnotify fuzz: {ran['cases']} cases ({ran['delivered']} delivered, "
        f"{ran['not delivered']} not); slowest {slowest:.2f} s; largest peak {worst:.0f} MB over "
        f"resident; resident grew {growth:.0f} MB; {fd_growth} more open files"
    )
    assert ran["cases"] >= cases
    assert ran["delivered"] > 0 and ran["not delivered"] > 0  # both outcomes were reached
    assert growth < MAX_GROWTH_MB
    assert fd_growth < MAX_FD_GROWTH
