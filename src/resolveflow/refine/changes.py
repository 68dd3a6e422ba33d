"""Refine's changes step: the commits that solved the similar tasks, and the suggested files.

Facts come from git, read from local clones only (``adapters/git`` never fetches): a related issue's
fixing commits are the squash commits ``... (#PR)`` of the pull requests that say they fix it (the
index's fix links) and the commits whose message says "fixes #N"; a related pull request's is its
own squash commit. As of the ticket's creation when it is known: later commits are not evidence.
A task whose commits cannot be read (a missing object in a partial clone) becomes a warning; a
configured clone that is missing stops the step (``CloneMissing``). Every suggested file passes the
repository's file rules (``include`` and ``exclude``), whatever evidence put it forward; a diff
excerpt is read only for the fixes of tasks judged highly relevant (the others are a link).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar
from uuid import UUID

from resolveflow.adapters.git import CommitInfo, FileStat, ObjectMissing
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.domain.localize import ChangeCounts, PastFix, suggest_files
from resolveflow.refine.domain.document import (
    COMMIT_KIND,
    ChangedFile,
    FixCommit,
    RefineDocument,
    RefineStep,
    RelatedHit,
    RelatedPage,
    RelatedTask,
    StepWarning,
    SuggestedFile,
    TaskKind,
)
from resolveflow.refine.domain.rules import FileRules
from resolveflow.retrieval.records import Hit
from resolveflow.store import documents as store
from resolveflow.store.database import Database

SIMILAR_DEPTH = 50  # the related step's depth: enough similar tasks that MAX_TASKS have fixes
MAX_TASKS = 20  # the similar tasks with fixes that vote (chosen with the weights, docs/refine.md)
MAX_COMMITS_PER_TASK = 3
MAX_EXCERPTS = 8  # diff excerpts read (of highly relevant tasks' fixes): each is a git call
SUGGESTED = 10

H = TypeVar("H", bound=RelatedHit)


@dataclass
class ChangesDeps:
    db: Database
    tenant_id: UUID
    histories: Mapping[str, RepositoryHistory]  # repository name -> its clone's history
    files: FileRules = field(default_factory=FileRules)  # which files may be suggested
    excerpts: bool = True  # diff excerpts (the evaluation skips them: it only ranks files)
    file_weights: bool = True  # weigh the votes by how rarely commits change each file


def changes_step(doc: RefineDocument, deps: ChangesDeps) -> RefineDocument:
    """Fill ``changes`` and ``suggested_files`` from the related tasks' fixes."""
    out = doc.model_copy(deep=True)
    history = _history_for(out, deps)
    if history is None:
        out.done.append(RefineStep.CHANGES)
        return out
    as_of = out.ticket.created_at
    # The most similar tasks that have a fix in the clone vote: a similar task nobody fixed
    # says nothing about files, so it must not push a fixed one out of the vote.
    found = _fixing_commits(deps, history, out.related, as_of)
    tasks = [t for t in out.related if t.external_id in found][:MAX_TASKS]
    stats = history.stats([c.sha for commits in found.values() for c, _ in commits])
    snapshot = history.snapshot(as_of)
    allowed = deps.files.allows
    files = [f for f in history.files_at(snapshot) if allowed(f)] if snapshot else []
    in_snapshot = frozenset(files)  # once per call: every task keeps the changed files found here
    fixes: list[PastFix] = []
    for task in tasks:
        commits = found.get(task.external_id, [])
        missing = [c.sha[:10] for c, _ in commits if c.sha not in stats]
        if missing:
            out.warnings.append(
                _warn(
                    f"task {task.external_id}: commits {', '.join(missing)} "
                    "could not be read from the clone (missing objects)"
                )
            )
        readable = [(c, how) for c, how in commits if c.sha in stats]
        for commit, how in readable:
            out.changes.append(_fix_commit(task, history.name, commit, how, stats[commit.sha]))
        changed = {s.path for c, _ in readable for s in stats[c.sha]}
        fixes.append(
            PastFix(
                task.external_id,
                task.score,
                frozenset(changed & in_snapshot),
                tuple(c.sha for c, _ in readable),
            )
        )
    definitions = _definitions(out, history, snapshot)
    text = f"{out.ticket.title}\n\n{out.ticket.body}"
    counts = ChangeCounts(*history.change_counts(as_of)) if deps.file_weights else None
    ranking = suggest_files(
        text, files, definitions, fixes, limit=SUGGESTED, allowed=allowed, counts=counts
    )
    for ranked in ranking:
        out.suggested_files.append(
            SuggestedFile(
                path=ranked.path,
                repository=history.name,
                score=round(ranked.score, 4),
                commits=ranked.commits,
                reasons=ranked.reasons,
            )
        )
    if deps.excerpts:
        _add_excerpts(out, history, deps.files)
    out.done.append(RefineStep.CHANGES)
    return out


def _definitions(
    doc: RefineDocument, history: RepositoryHistory, snapshot: str | None
) -> dict[str, set[str]]:
    if snapshot is None:
        return {}
    try:
        return history.definitions_at(snapshot)
    except ObjectMissing:  # a blobless clone: the names are one kind of evidence less
        doc.warnings.append(
            _warn(
                "the clone lacks the file contents (a partial clone): "
                "names defined in the code were not used"
            )
        )
        return {}


def _history_for(doc: RefineDocument, deps: ChangesDeps) -> RepositoryHistory | None:
    wanted = doc.ticket.repository
    if wanted and wanted in deps.histories:
        return deps.histories[wanted]
    if len(deps.histories) == 1 and not wanted:
        return next(iter(deps.histories.values()))
    where = f"for {wanted}" if wanted else "(the ticket names no repository)"
    doc.warnings.append(
        _warn(f"no local clone is configured {where}: no changes or suggested files")
    )
    return None


def _fixing_commits(
    deps: ChangesDeps,
    history: RepositoryHistory,
    tasks: Sequence[RelatedTask],
    as_of: datetime | None,
) -> dict[str, list[tuple[CommitInfo, str]]]:
    pulls: dict[str, list[str]] = {}
    with deps.db.tenant(deps.tenant_id) as conn:
        for source in {t.source for t in tasks if t.kind == TaskKind.ISSUE}:
            ids = [t.external_id for t in tasks if t.source == source and t.kind == TaskKind.ISSUE]
            pulls.update(store.fixing_pulls(conn, deps.tenant_id, source, ids))
    found: dict[str, list[tuple[CommitInfo, str]]] = {}
    for task in tasks:
        if task.kind == COMMIT_KIND:  # a past task from the git history: its own fix
            own = history.by_sha.get(task.external_id)
            if own is not None and (as_of is None or own.committed_at < as_of):
                found[task.external_id] = [(own, "the commit itself")]
            continue
        if not task.external_id.isdigit():
            continue
        number = int(task.external_id)
        candidates: list[tuple[CommitInfo, str]] = []
        if task.kind == TaskKind.PULL and number in history.by_pull:
            candidates.append((history.by_pull[number], f"squash (#{number})"))
        for pull in pulls.get(task.external_id, []):
            if pull.isdigit() and int(pull) in history.by_pull:
                candidates.append((history.by_pull[int(pull)], f"fix link (#{pull})"))
        if task.kind == TaskKind.ISSUE:
            candidates += [(c, f"fixes #{number}") for c in history.by_issue.get(number, [])]
        seen: set[str] = set()
        kept = []
        for commit, how in candidates:
            if commit.sha in seen or (as_of is not None and commit.committed_at >= as_of):
                continue
            seen.add(commit.sha)
            kept.append((commit, how))
        if kept:
            found[task.external_id] = kept[:MAX_COMMITS_PER_TASK]
    return found


def _fix_commit(
    task: RelatedTask, repository: str, commit: CommitInfo, how: str, stats: Sequence[FileStat]
) -> FixCommit:
    return FixCommit(
        task=task.external_id,
        repository=repository,
        sha=commit.sha,
        committed_at=commit.committed_at,
        subject=commit.subject,
        how=how,
        files=[ChangedFile(path=s.path, added=s.added, removed=s.removed) for s in stats],
    )


def _add_excerpts(doc: RefineDocument, history: RepositoryHistory, rules: FileRules) -> None:
    """An excerpt of each fix of a task judged high, of the file that matters most here: the best
    suggested file it changed, else its most changed file the file rules allow, else its most
    changed file. The other fixes get none: the Markdown links them instead."""
    rank = {f.path: n for n, f in enumerate(doc.suggested_files)}
    high = [c for c in doc.changes if doc.judged_high(c.task) and c.files]
    for change in high[:MAX_EXCERPTS]:
        biggest = min(
            change.files,
            key=lambda f: (
                rank.get(f.path, len(rank)),
                not rules.allows(f.path),
                -((f.added or 0) + (f.removed or 0)),
            ),
        )
        try:
            excerpt = history.repo.diff_excerpt(change.sha, biggest.path)
        except ObjectMissing:
            doc.warnings.append(
                _warn(
                    f"commit {change.sha[:10]}: the diff of {biggest.path} "
                    "is missing from the clone"
                )
            )
            continue
        change.excerpt, change.excerpt_truncated = excerpt.text, excerpt.truncated


def _warn(message: str) -> StepWarning:
    return StepWarning(step=RefineStep.CHANGES, message=message)


def task_from_hit(hit: Hit) -> RelatedTask:
    """A search hit as a related task (the related step's unit)."""
    return _from_hit(RelatedTask, hit)


def page_from_hit(hit: Hit) -> RelatedPage:
    """A search hit that is not a task, as a related page."""
    return _from_hit(RelatedPage, hit)


def _from_hit(kind: type[H], hit: Hit) -> H:
    return kind(
        source=hit.source,
        external_id=hit.external_id,
        kind=hit.kind,
        title=hit.title,
        url=hit.url,
        score=round(hit.fused, 6),
        cosine=round(hit.scores.cosine, 6),
        labels=list(hit.labels),
        runbook_tag=hit.runbook_tag,
        created_at=hit.created_at,
        excerpt=hit.snippet,
    )
