"""The layering check must be able to fail: plant violations in a copy of the tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "check_layers.py"
SRC = ROOT / "src" / "resolveflow"


def _run(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(tree)], capture_output=True, text=True, check=False
    )


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "resolveflow"
    shutil.copytree(SRC, tree, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def test_the_real_tree_passes() -> None:
    result = _run(SRC)
    assert result.returncode == 0, result.stdout
    assert "post_comment" in result.stdout


def test_domain_importing_io_fails(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    (tree / "domain" / "sneaky.py").write_text("import psycopg\nfrom resolveflow.store import x\n")
    result = _run(tree)
    assert result.returncode == 1
    assert "domain imports psycopg" in result.stdout
    assert "outside the domain" in result.stdout


def test_write_call_outside_execution_fails(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    (tree / "mail" / "sneaky.py").write_text(
        "def f(gh):\n    gh.post_comment(None, 1, 'x')\n    getattr(gh, 'add_labels')(None, 1, [])\n"
    )
    result = _run(tree)
    assert result.returncode == 1
    assert "calls write method post_comment()" in result.stdout
    assert "calls write method add_labels()" in result.stdout


def test_write_calls_on_objects_typed_or_built_as_writer_classes_fail(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    (tree / "mail" / "sneaky.py").write_text(
        "from resolveflow.adapters.github.client import GitHubKitClient\n"
        "from resolveflow.adapters.smtp.protocol import Mailer\n"
        "class Hub(GitHubKitClient):\n"  # a subclass inherits the writes
        "    pass\n"
        "class Holder:\n"
        "    gh: 'GitHub | None'\n"
        "    def h(self) -> None:\n"
        "        self.gh.add_labels(None, 1, [])\n"
        "def f(mailer: Mailer, message: object) -> None:\n"
        "    mailer.send_message(message)\n"
        "    with Hub() as hub:\n"
        "        hub.create_issue(None, 't', 'b')\n"
        "    GitHubKitClient().post_comment(None, 1, 'x')\n"
    )
    result = _run(tree)
    assert result.returncode == 1
    flagged = [line for line in result.stdout.splitlines() if "sneaky.py" in line]
    assert sorted(int(line.split(":")[1]) for line in flagged) == [8, 10, 12, 13], result.stdout


def test_a_method_of_the_same_name_on_another_class_is_not_a_write(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    (tree / "mail" / "outbox.py").write_text(
        "class Outbox:\n"
        "    def send_message(self, text: str) -> None: ...\n"
        "    def post_comment(self) -> None: ...\n"
        "def f(box: Outbox) -> None:\n"
        "    box.send_message('x')\n"
        "    Outbox().post_comment()\n"
        "    other = Outbox()\n"
        "    getattr(other, 'send_message')('y')\n"
    )
    result = _run(tree)
    assert result.returncode == 0, result.stdout


def test_a_write_named_send_flags_only_sends_on_mailers(tmp_path: Path) -> None:
    """Were the SMTP write named ``send``, the sandbox's many ``exchange.send(...)`` (an
    ``Exchange``, typed or constructed) must stay unflagged; a mailer's ``send`` must not."""
    tree = _copy(tmp_path)
    for name in ("protocol.py", "client.py"):
        path = tree / "adapters" / "smtp" / name
        path.write_text(path.read_text().replace("def send_message(", "def send("))
    assert "exchange.send(" in (tree / "sandbox" / "loopback.py").read_text()
    (tree / "mail" / "sneaky.py").write_text(
        "from resolveflow.adapters.smtp.protocol import Mailer\n"
        "def f(mailer: Mailer, message: object) -> None:\n"
        "    mailer.send(message)\n"
    )
    result = _run(tree)
    assert result.returncode == 1
    problems = [line for line in result.stdout.splitlines() if "calls write method" in line]
    assert len(problems) == 1 and "sneaky.py:3: calls write method send()" in problems[0], problems
