"""What a round of ``worker --once`` did not get done, so the command can exit non-zero and say
so (docs/cli.md, "When the work failed"): jobs that raised, executions that ended ``failed``,
``partial`` or ``unknown``, and executions left unsent because nothing could write them.

The long-running worker keeps no report (it would grow forever): it logs instead.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from uuid import UUID

from resolveflow.domain.counted import counted
from resolveflow.domain.records import Execution
from resolveflow.domain.vocabulary import ExecutionState
from resolveflow.errors import ConfigError, ResolveFlowError, Unavailable
from resolveflow.gate.credentials import no_credential_message

# The outcomes that mean the work did not get done: a person has to look (as `execute --once`).
NOT_DONE = frozenset({ExecutionState.FAILED, ExecutionState.PARTIAL, ExecutionState.UNKNOWN})


@dataclass
class WorkReport:
    failed_jobs: list[str] = field(default_factory=list)
    not_done: dict[UUID, str] = field(default_factory=dict)
    waiting: dict[UUID, str] = field(default_factory=dict)  # execution -> the setting it needs
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def job_failed(self, task: str, exc: BaseException) -> None:
        why = exc.message if isinstance(exc, ResolveFlowError) else f"{type(exc).__name__}: {exc}"
        with self._lock:
            self.failed_jobs.append(f"job {task} failed: {why}")

    def executed(self, execution: Execution) -> None:
        with self._lock:
            self.waiting.pop(execution.id, None)  # it found a credential after all
            if execution.state in NOT_DONE:
                self.not_done[execution.id] = (
                    f"{execution.id} {execution.state.value}: {execution.detail or 'no detail'}"
                )

    def wait_for_credential(self, problems: dict[UUID, str]) -> dict[UUID, str]:
        """Note them; returns those not noted before."""
        with self._lock:
            new = {key: why for key, why in problems.items() if key not in self.waiting}
            self.waiting.update(problems)
        return new

    def raise_if_not_done(self) -> None:
        """ConfigError (exit 7) when executions wait for a setting, as ``execute`` refuses;
        else Unavailable (exit 6) when jobs or executions failed, as ``execute --once`` does."""
        with self._lock:
            failures = [*self.failed_jobs, *self.not_done.values()]
            waiting = dict(self.waiting)
        also = f"; also: {'; '.join(failures)}" if failures else ""
        if waiting:
            raise ConfigError(no_credential_message(waiting) + also)
        if failures:
            raise Unavailable(
                f"{counted(len(failures), 'job or execution', 'jobs or executions')} did not complete: "
                f"{'; '.join(failures)}; "
                "see `resolveflow executions show ID`"
            )
