"""The sample repository ``sandbox/widgets`` that ``resolveflow demo`` and ``resolveflow sandbox``
seed the sandbox forge with: a small "widgets" library, its labels, a failing CI run, a few
closed issues (the knowledge the investigation searches) and open issues that each take one
branch of triage.

Issue numbers are stable (the README's quickstart names them):

=====  ======  ==========================================================================
issue  state   what it is, and how triage classifies it
=====  ======  ==========================================================================
1      open    "Widgets sometimes show up in the wrong order": a vague report with no
               detail -> ``human_review`` (rule ``fallback``); a plain issue to comment on
2      closed  "Loader crashes on an empty widgets.yaml" (``bug``): what #6 duplicates
3      closed  "CI fails on Python 3.12: distutils import" (``ci-failure``)
4      closed  "How do I load widgets from a URL?" (``question``): what #8 duplicates
5      closed  "Flaky test: test_render_timeout on macOS runners" (``ci-failure``, ``bug``)
6      open    "Empty widgets.yaml makes the loader crash": a short report whose duplicate
               is #2 -> ``ai_investigation`` (rule ``is_information_sparse``), a comment
               citing #2 from retrieval alone (no model)
7      open    "CI is red on main since this morning": links the failed workflow run ``CI``
               -> ``deterministic`` (rule ``has_failing_ci``), a comment listing the failing
               checks plus the label ``ci-failure``
8      open    demo only, opened while the demo runs and announced by a signed webhook:
               "Can the loader read widgets from a web address?" -> ``ai_investigation``,
               citing #4
=====  ======  ==========================================================================

The service account is ``SERVICE_LOGIN``, and ``SERVICE_TOKEN`` is its token (a sandbox's
well-known value, not a secret). The sign-in page offers ``SANDBOX_USER``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth

REPO = "sandbox/widgets"
LABELS = ["bug", "ci-failure", "needs-triage", "question", "documentation"]
SERVICE_LOGIN = "resolveflow-sandbox-bot"
SERVICE_TOKEN = "sandbox-service-token"  # noqa: S105 - the sandbox forge's own, not a secret
SANDBOX_USER = "maintainer"  # offered on the forge's sign-in page; may push everywhere
CI_CHECK = "tests (3.12)"


@dataclass(frozen=True)
class Sample:
    number: int
    title: str
    body: str  # ``{ci_run}`` and ``{ci_job}``: the URLs of the failed workflow run and its job
    labels: tuple[str, ...] = ()
    state: str = "open"
    user: str = "octocat"


VAGUE = Sample(
    1,
    "Widgets sometimes show up in the wrong order",
    "Some of our dashboards show their widgets in a different order than the one we "
    "configured. It does not happen every time and I could not find a pattern: restarting "
    "sometimes helps, sometimes not. Is this a known problem, or is there a setting we are "
    "missing? It is quite confusing for the people who use these dashboards.",
    user="dana-ops",
)
DUPLICATE = Sample(
    6,
    "Empty widgets.yaml makes the loader crash",
    "When widgets.yaml is empty the loader crashes instead of loading no widgets.",
    user="sam-k",
)
FAILING_CI = Sample(
    7,
    "CI is red on main since this morning",
    "The CI run {ci_run} fails in its job {ci_job} (`tests (3.12)`), and nothing changed on "
    "our side.",
    user="octocat",
)
LATE = Sample(
    8,
    "Can the loader read widgets from a web address?",
    "We keep our widget definitions on an internal web server. Can the loader fetch them "
    "from a URL, or do we have to download the file first?",
    user="lee-data",
)

CLOSED = [
    Sample(
        2,
        "Loader crashes on an empty widgets.yaml",
        "Loading an empty `widgets.yaml` raises `TypeError: 'NoneType' object is not "
        "iterable` in `parse_widgets`.\n\nFixed in 2.1: an empty file now means no widgets.",
        labels=("bug",),
        state="closed",
    ),
    Sample(
        3,
        "CI fails on Python 3.12: distutils import",
        "The `tests (3.12)` job fails with `ModuleNotFoundError: No module named "
        "'distutils'`.\n\nResolved by moving the version check to `packaging`.",
        labels=("ci-failure",),
        state="closed",
    ),
    Sample(
        4,
        "How do I load widgets from a URL?",
        "Is there a way to point the loader at an HTTP URL instead of a local file?\n\n"
        "Answered: `widgets.load(url)` accepts http and https URLs since 2.0; pass "
        "`timeout=` for slow servers.",
        labels=("question",),
        state="closed",
    ),
    Sample(
        5,
        "Flaky test: test_render_timeout on macOS runners",
        "`test_render_timeout` fails about one run in ten on macOS with a 2 s timeout.\n\n"
        "Resolved by raising the timeout on CI runners only.",
        labels=("ci-failure", "bug"),
        state="closed",
    ),
]
SEEDED = sorted([VAGUE, DUPLICATE, FAILING_CI, *CLOSED], key=lambda sample: sample.number)
OPEN = [sample for sample in SEEDED if sample.state == "open"]


@dataclass(frozen=True)
class FailedCi:
    """The ids of the failed workflow run ``CI`` and of its job, a check run."""

    run_id: int
    job_id: int


def seed(fake: FakeGitHubWithOAuth) -> FailedCi:
    """Labels, the failed CI run, issues 1 to 7, the service token and the sign-in user, on a
    started forge (issue 7 links the run and its job by their URLs)."""
    fake.add_repo(REPO, LABELS)
    sha = hashlib.sha1(b"sandbox main", usedforsecurity=False).hexdigest()
    job = fake.add_check_run(REPO, sha, CI_CHECK, conclusion="failure", title="2 tests failed")
    ci = FailedCi(fake.add_workflow_run(REPO, "CI", head_sha=sha, conclusion="failure"), job)
    for sample in SEEDED:
        add(fake, sample, ci)
    fake.register_token(SERVICE_TOKEN, SERVICE_LOGIN)
    fake.add_oauth_user(SANDBOX_USER)
    return ci


def add(fake: FakeGitHubWithOAuth, sample: Sample, ci: FailedCi) -> None:
    """Open (or seed closed) one sample issue on the forge."""
    fake.add_issue(
        REPO,
        sample.number,
        sample.title,
        sample.body.format(
            ci_run=f"{fake.url}/{REPO}/actions/runs/{ci.run_id}",
            ci_job=f"{fake.url}/{REPO}/runs/{ci.job_id}",
        ),
        labels=sample.labels,
        state=sample.state,
        user=sample.user,
    )
