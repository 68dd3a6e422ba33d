"""Refine's output: one Markdown enrichment of a ``RefineDocument``. Pure.

Everything that comes from a ticket, a past task, a commit or a model is untrusted and made inert
before it is placed: prose through ``inert`` (HTML, link and image syntax, emphasis and table
characters as numeric entities; URLs defanged so nothing autolinks; ``@`` followed by a zero-width
joiner so nobody is mentioned) and paths, facts and hashes through ``code`` (a code span whose
backtick run is longer than any inside it, so it cannot be closed early and no fence can open).
Links come only from the index and only when they are plain http(s) URLs. The runbook's checklist
is trusted (an approver vouched for it) and is quoted as it is stored.

Related tasks and related pages are two sections: a document that is not a task is never listed
as one, and a page is listed only when judged relevant enough (``PAGE_FLOOR``). Only the fixes of
tasks judged high show their files and diff; any other fix is one line, its commit id and a link
to the task it fixed.
"""

from __future__ import annotations

from collections.abc import Iterator

from resolveflow.domain.inert_markdown import backtick_run, code, inert, link
from resolveflow.refine.domain.document import (
    COMMIT_KIND,
    GIT_SOURCE_PREFIX,
    PAGE_FLOOR,
    FixCommit,
    Judgement,
    RefineDocument,
    RelatedHit,
    ScopeName,
    SuggestedFile,
)

MAX_MARKDOWN_CHARS = 60_000
MAX_CHECKLIST_CHARS = 20_000
MAX_COMMITS = 12
MAX_EXCERPTS_SHOWN = 3
MAX_FILES_PER_COMMIT = 10
MAX_SUGGESTED = 20
CUT = "\n\n(cut)"


def _task_ref(task: RelatedHit) -> str:
    eid = task.external_id
    if task.kind == COMMIT_KIND:
        return f"commit {code(eid[:10])}"
    return f"#{eid}" if eid.isdigit() else inert(eid, 80)


def _summary(doc: RefineDocument) -> Iterator[str]:
    summary = doc.summary
    if summary is None:
        return
    yield "### Summary"
    yield ""
    yield inert(summary.task, 1500)
    facts = summary.facts
    for name, items in (("Versions", facts.versions), ("Errors", facts.errors),
                        ("Stack frames", facts.stack_frames), ("Files", facts.file_paths)):  # fmt: skip
        if items:
            yield f"- {name}: " + ", ".join(code(i) for i in items[:10])
    yield ""
    configured = summary.configured_scopes
    if not configured:  # a repository with no scope globs: nothing to say about scopes
        return
    yield "### Scopes"
    yield ""
    for scope, name, paths in ((ScopeName.FRONTEND, "Frontend", summary.frontend_scope),
                               (ScopeName.BACKEND, "Backend", summary.backend_scope)):  # fmt: skip
        if scope not in configured:
            continue
        shown = ", ".join(code(p) for p in paths[:15]) or "none found"
        more = f" and {len(paths) - 15} more" if len(paths) > 15 else ""
        yield f"- {name}: {shown}{more}"
    if summary.split_required:
        yield "- The work touches both frontend and backend: consider a split into two tasks."
    yield ""


def _judged_line(item: RelatedHit, judged: Judgement | None, name: str) -> str:
    level = f"**{judged.relevance.value}**" if judged else "**not judged**"
    reason = f" ({inert(judged.reason, 200)})" if judged else ""
    return (f"- {level} {link(name, item.url)}: {inert(item.title, 160)}{reason}, "
            f"score {item.score:.3f}, cosine {item.cosine:.2f}")  # fmt: skip


def _related(doc: RefineDocument) -> Iterator[str]:
    yield "### Related tasks"
    yield ""
    if not doc.related:
        yield "No similar past task was found."
    elif any(t.source.startswith(GIT_SOURCE_PREFIX) for t in doc.related):
        yield "From the repository's git history: its past commits and pull requests."
        yield ""
    judged_ids = {j.external_id for j in doc.judgements}
    shown = [t for t in doc.related if t.external_id in judged_ids] if judged_ids else doc.related
    for task in shown:
        yield _judged_line(task, doc.judgement(task.external_id), _task_ref(task))
    if len(shown) < len(doc.related):
        yield (f"- and {len(doc.related) - len(shown)} more similar tasks, searched for the "
               "changes that fixed them")  # fmt: skip
    yield ""


def _pages(doc: RefineDocument) -> Iterator[str]:
    yield "### Related pages"
    yield ""
    relevant = doc.relevant_pages()
    for page, judged in relevant:
        yield _judged_line(page, judged, f"{inert(page.title or page.external_id, 160)} "
                           f"({code(page.external_id)})")  # fmt: skip
    if not doc.pages:
        yield "No page of the index was found."
    elif not relevant:
        yield (f"No page was judged {PAGE_FLOOR.value} enough to list "
               f"({len(doc.pages)} found).")  # fmt: skip
    elif len(relevant) < len(doc.pages):
        yield (f"- and {len(doc.pages) - len(relevant)} more pages judged below "
               f"{PAGE_FLOOR.value} (in the JSON document)")  # fmt: skip
    yield ""


def _runbook(doc: RefineDocument) -> Iterator[str]:
    runbook = doc.runbook
    if runbook is None:
        return
    yield "### Runbook"
    yield ""
    title = link(inert(runbook.title, 200), runbook.url)
    yield f"{title} ({code(runbook.path)}), chosen by {inert(runbook.why, 200)}. Its checklist:"
    yield ""
    checklist = runbook.checklist.strip()[:MAX_CHECKLIST_CHARS]
    yield from (f"> {line}".rstrip() for line in checklist.split("\n"))
    yield ""


def _commit(doc: RefineDocument, commit: FixCommit) -> Iterator[str]:
    """A fix of a task judged high: its files (and, from the caller, its diff); any other fix:
    one line, its commit id and a link to the task it fixed."""
    when = commit.committed_at.date().isoformat()
    judged = doc.judgement(commit.task)
    task = next((t for t in doc.related if t.external_id == commit.task), None)
    fixed = link(_task_ref(task), task.url) if task else inert(commit.task, 40)
    said = f"{judged.relevance.value}, " if judged else ""
    yield (f"- {code(commit.sha[:7])} {when} {inert(commit.subject, 160)} "
           f"(fixed {fixed}, {said}found by {inert(commit.how, 40)})")  # fmt: skip
    if not doc.judged_high(commit.task):
        return
    for f in commit.files[:MAX_FILES_PER_COMMIT]:
        counts = "(binary)" if f.added is None else f"+{f.added} −{f.removed or 0}"
        yield f"  - {code(f.path)} {counts}"
    if len(commit.files) > MAX_FILES_PER_COMMIT:
        yield f"  - and {len(commit.files) - MAX_FILES_PER_COMMIT} more files"


def _excerpt(commit: FixCommit) -> Iterator[str]:
    """The commit's diff excerpt in a fence that nothing inside can close (inside a fence
    nothing links or mentions, so the text stays as git printed it)."""
    text = commit.excerpt.rstrip("\n")
    fence = "`" * max(3, backtick_run(text) + 1)
    yield ""
    yield f"  {fence}diff"
    yield from (f"  {line}" for line in text.split("\n"))
    if commit.excerpt_truncated:
        yield "  … (cut)"
    yield f"  {fence}"


def _commits_shown(doc: RefineDocument) -> list[FixCommit]:
    """The commits of the tasks shown above, then those behind the suggested files."""
    shown = {j.external_id for j in doc.judgements}
    behind = {sha for item in doc.suggested_files for sha in item.commits}
    first = [c for c in doc.changes if c.task in shown]
    rest = [c for c in doc.changes if c.task not in shown and c.sha in behind]
    return first + rest


def _suggested(item: SuggestedFile) -> str:
    reasons = "; ".join(inert(r, 120) for r in item.reasons[:5])
    commits = ", ".join(code(sha[:7]) for sha in item.commits[:5])
    line = f"- {code(item.path)} ({inert(item.repository, 100)}) score {item.score:.2f}"
    line += f": {reasons}" if reasons else ""
    return line + (f"; commits {commits}" if commits else "")


def _changes(doc: RefineDocument) -> Iterator[str]:
    if doc.changes:
        yield "### Changes that solved the related tasks"
        yield ""
        chosen = _commits_shown(doc)[:MAX_COMMITS]
        excerpts = 0
        for commit in chosen:
            yield from _commit(doc, commit)
            if doc.judged_high(commit.task) and commit.excerpt and excerpts < MAX_EXCERPTS_SHOWN:
                excerpts += 1
                yield from _excerpt(commit)
        if len(doc.changes) > len(chosen):
            yield (f"- and {len(doc.changes) - len(chosen)} more commits of other similar "
                   "tasks (in the JSON document)")  # fmt: skip
        yield ""
    if doc.suggested_files:
        yield "### Suggested files"
        yield ""
        yield from (_suggested(item) for item in doc.suggested_files[:MAX_SUGGESTED])
        yield ""


def _warnings(doc: RefineDocument) -> Iterator[str]:
    if doc.warnings:
        yield "### Warnings"
        yield ""
        yield from (f"- {w.step.value}: {inert(w.message, 300)}" for w in doc.warnings)
        yield ""


def render_markdown(doc: RefineDocument) -> str:
    """The enrichment: summary, scopes, related tasks, related pages, runbook, changes, suggested
    files and warnings, at most ``MAX_MARKDOWN_CHARS`` characters (ending in "(cut)" when cut)."""
    generator = doc.summary.generator if doc.summary else "none"
    lines = [f"## Refined: {inert(doc.ticket.title, 200)}", ""]
    for part in (_summary, _related, _pages, _runbook, _changes, _warnings):
        lines.extend(part(doc))
    lines.append(f"Drafted by ResolveFlow refine (summary: {inert(generator, 80)}). The ticket's "
                 "text is shown as data; nothing in it was followed.")  # fmt: skip
    markdown = "\n".join(lines)
    if len(markdown) <= MAX_MARKDOWN_CHARS:
        return markdown
    cut = markdown.rfind("\n", 0, MAX_MARKDOWN_CHARS - len(CUT))
    return markdown[: max(cut, 0)] + CUT
