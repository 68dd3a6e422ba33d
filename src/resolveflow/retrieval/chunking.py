"""Structure-following chunks: the title with the body's head, then body sections, then comments.

Pure functions, no I/O. Sizes are in characters (about four per token for English). The head chunk
is what a person reads first and what duplicate search leans on; body sections overlap by about
one paragraph so a sentence cut at a boundary is still whole in one of the two chunks. Fenced code
blocks stay whole when they fit. A document yields at most ``MAX_CHUNKS`` chunks: a 1 MB log pasted
into an issue is indexed by its first ~70 kB, not by thousands of vectors.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

CHUNKER_VERSION = 1
HEAD_BODY_CHARS = 600
CHUNK_CHARS = 1200
OVERLAP_CHARS = 200
MAX_CHUNKS = 64
MAX_INPUT_CHARS = MAX_CHUNKS * CHUNK_CHARS  # what chunking looks at, at most

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
# Browser user-agent lines (Bugzilla's template) say nothing about the problem but would take a
# quarter of a 128-token embedding window.
_USER_AGENT = re.compile(r"^\s*user[ -]agent:.*$", re.IGNORECASE | re.MULTILINE)
_BLANK_RUNS = re.compile(r"\n{3,}")


# Kinds whose every chunk gets its own vector: a runbook's sections are separate answers.
# An issue's or pull request's meaning is mostly in its title and first paragraphs (and the
# embedder only reads 128 tokens of any chunk), so its later chunks are found by their words and
# by meaning through the head's vector: a third of the embedding work (docs/retrieval.md).
EMBED_EVERY_CHUNK_KINDS = frozenset({"runbook", "doc"})
DEFAULT_VECTORS_PER_REPORT = 1


def gets_vector(kind: str, ordinal: int, vectors_per_report: int) -> bool:
    """Whether a document's chunk at ``ordinal`` is embedded (else it is lexical only)."""
    return kind in EMBED_EVERY_CHUNK_KINDS or ordinal < vectors_per_report


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    section: str  # head | body | comment
    text: str


@dataclass(frozen=True)
class CommentText:
    author: str
    body: str


def normalize_text(text: str | None) -> str:
    """NFC, LF line ends, no control characters (Postgres text cannot hold NUL), trimmed."""
    if not text:
        return ""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CONTROL.sub("", text)
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def embedding_text(title: str, section: str, text: str) -> str:
    """What the embedder sees for a chunk: boilerplate removed, the title as context."""
    cleaned = _BLANK_RUNS.sub("\n\n", _USER_AGENT.sub("", text)).strip()
    if section == "head" or not title:
        return cleaned
    return f"{title}\n{cleaned}"


def query_text(text: str) -> str:
    """A query gets the same clean-up as a document's head."""
    return embedding_text("", "head", normalize_text(text))


def chunk_document(
    title: str, body: str, comments: Sequence[CommentText] = (), *, max_chunks: int = MAX_CHUNKS
) -> list[Chunk]:
    title = normalize_text(title)
    body = normalize_text(body)[:MAX_INPUT_CHARS]
    blocks = _blocks(body)
    head_blocks, rest = _take_head(blocks, HEAD_BODY_CHARS)
    head = "\n\n".join(part for part in [title, *head_blocks] if part)
    texts: list[tuple[str, str]] = [("head", head)] if head else []
    if rest:
        overlap = _tail(head_blocks[-1], OVERLAP_CHARS) if head_blocks else ""
        texts.extend(("body", text) for text in _pack(rest, CHUNK_CHARS, OVERLAP_CHARS, overlap))
    for comment in comments:
        if len(texts) >= max_chunks:
            break
        comment_body = normalize_text(comment.body)[:MAX_INPUT_CHARS]
        if not comment_body:
            continue
        prefix = f"{comment.author} commented:\n" if comment.author else ""
        for text in _pack(_blocks(comment_body), CHUNK_CHARS - len(prefix), OVERLAP_CHARS, ""):
            texts.append(("comment", prefix + text))
    return [Chunk(i, section, text) for i, (section, text) in enumerate(texts[:max_chunks])]


def _blocks(text: str) -> list[str]:
    """Paragraphs, headings (each starts a block) and fenced code blocks (kept whole)."""
    blocks: list[str] = []
    current: list[str] = []
    in_fence = False

    def flush() -> None:
        if current:
            block = "\n".join(current).strip("\n")
            if block.strip():
                blocks.append(block)
            current.clear()

    for line in text.split("\n"):
        if _FENCE.match(line):
            if not in_fence:
                flush()
                in_fence = True
                current.append(line)
            else:
                current.append(line)
                in_fence = False
                flush()
            continue
        if in_fence:
            current.append(line)
        elif not line.strip():
            flush()
        elif _HEADING.match(line):
            flush()
            current.append(line)
        else:
            current.append(line)
    flush()
    return blocks


def _take_head(blocks: list[str], budget: int) -> tuple[list[str], list[str]]:
    """Whole blocks up to the budget; a first block larger than it is cut at a boundary."""
    taken: list[str] = []
    used = 0
    for index, block in enumerate(blocks):
        if used + len(block) <= budget:
            taken.append(block)
            used += len(block) + 2
            continue
        if not taken:
            first, remainder = _cut(block, budget)
            return [first], [remainder, *blocks[index + 1 :]] if remainder else blocks[index + 1 :]
        return taken, blocks[index:]
    return taken, []


def _pack(blocks: list[str], size: int, overlap: int, carried: str) -> list[str]:
    """Greedy packing of blocks into chunks of at most ``size``, each starting with an overlap."""
    pieces: list[str] = []
    for block in blocks:
        rest = block
        while len(rest) > size:
            first, rest = _cut(rest, size)
            pieces.append(first)
        if rest:
            pieces.append(rest)
    chunks: list[str] = []
    current = carried
    has_new = False
    for piece in pieces:
        candidate = f"{current}\n\n{piece}" if current else piece
        if len(candidate) <= size or not has_new:
            current, has_new = candidate[-size:] if len(candidate) > size else candidate, True
            continue
        chunks.append(current)
        current = f"{_tail(current, overlap)}\n\n{piece}".lstrip()
        current = current[-size:]
    if has_new and current:
        chunks.append(current)
    return chunks


def _cut(text: str, size: int) -> tuple[str, str]:
    """Split at the last line break, sentence end or space before ``size`` (else hard)."""
    window = text[:size]
    for boundary in ("\n", None, " "):
        if boundary is None:
            ends = [m.end() for m in _SENTENCE_END.finditer(window)]
            at = ends[-1] if ends else -1
        else:
            at = window.rfind(boundary) + 1
        if at > size // 2:
            return text[:at].rstrip(), text[at:].lstrip()
    return text[:size], text[size:]


def _tail(text: str, size: int) -> str:
    """The last ``size`` characters, starting at a word boundary when there is one."""
    if len(text) <= size:
        return text
    tail = text[-size:]
    space = tail.find(" ")
    return tail[space + 1 :] if 0 <= space < size // 2 else tail
