"""The run page shows the investigation: gates green or red with reasons, cited snippets linked
with their scores, the diagnosis; untrusted text in it stays inert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.templating import Jinja2Templates

import resolveflow.web as web_package
from resolveflow.web import filters
from resolveflow.web.markdown import render, reveal

TEMPLATES = Path(web_package.__file__).parent / "templates"


def _view(investigation: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": "r1",
        "status": "awaiting_approval",
        "target": "acme/widgets#7",
        "classification": "ai_investigation",
        "rule": "is_information_sparse",
        "reason": "short",
        "branch": "ai_investigation",
        "route_reason": "escalated",
        "facts": {},
        "detail": {},
        "proposal": None,
        "proposal_id": None,
        "digest": None,
        "timeline": [],
        "issue": {
            "title": "t",
            "body": "",
            "author": "a",
            "url": "",
            "state": "open",
            "labels": [],
        },
        "comments": [],
        "check_runs": [],
        "gates": [],
        "investigation": {"investigations": [investigation], "model_calls": []},
    }


def test_run_page_renders_the_investigation_inert_and_linked() -> None:
    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.filters["markdown"] = render
    templates.env.filters["reveal"] = reveal
    templates.env.globals["sandbox"] = False
    filters.install(templates.env)
    investigation = {
        "provider": "scripted",
        "model": "m",
        "relevance_floor": 0.15,
        "outcome": "escalate",
        "reason": "groundedness failed",
        "diagnosis": {
            "root_cause": "<script>alert(1)</script>",
            "severity": "high",
            "missing_info": [],
            "recommended_next_steps": ["pin fsspec"],
            "citations": ["S1"],
            "suggested_labels": [],
            "duplicate_of": None,
        },
        "critique": "<img src=x onerror=alert(2)>",
        "gates": [
            {"name": "groundedness", "passed": False, "reason": "S9 was not retrieved"},
            {"name": "risk", "passed": True, "reason": "severity medium"},
        ],
        "snippets": [
            {
                "id": "S1",
                "title": "<b>Hub timeout</b>",
                "relevance": 0.8123,
                "url": "https://github.com/acme/widgets/issues/3",
                "resolved_by": ["5"],
            },
            {
                "id": "S2",
                "title": "evil",
                "relevance": 0.2,
                "url": "javascript:alert(3)",
                "resolved_by": [],
            },
        ],
    }
    html = templates.env.get_template("run.html").render(
        run=_view(investigation),
        viewer=None,
        notice=None,
        following=False,
        execution_state=None,
        request=None,
    )
    assert 'id="investigation"' in html
    assert "✘ grounded in the sources</strong>: S9 was not retrieved" in html  # in words
    assert 'data-gate="groundedness"' in html
    assert "✔ risk</strong>" in html
    assert '<a href="https://github.com/acme/widgets/issues/3"' in html and "0.81" in html
    assert "javascript:alert(3)" not in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "<img src=x" not in html and "<b>Hub timeout</b>" not in html


def test_run_page_offers_the_close_after_grace_beside_a_kept_duplicate() -> None:
    """One click (a form with the viewer's CSRF token) creates the close-as-duplicate proposal;
    a run without the offer, or a viewer not signed in, shows no form."""
    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.filters["markdown"] = render
    templates.env.filters["reveal"] = reveal
    templates.env.globals["sandbox"] = False
    filters.install(templates.env)
    view = {**_view({}), "investigation": None}
    offered = {
        **view,
        "detail": {"close_duplicate": {"issue": "acme/widgets#7", "original": 3, "score": 0.62}},
    }
    viewer = {"csrf_token": "tok", "via": "session", "principal": {"subject": "alex", "roles": []}}
    page = templates.env.get_template("run.html")
    html = page.render(run=offered, viewer=viewer, notice=None, following=False, request=None)
    assert 'id="close-duplicate-offer"' in html
    assert 'action="/runs/r1/close-duplicate"' in html and 'value="tok"' in html
    assert "duplicate of #3" in html
    none = page.render(run=view, viewer=viewer, notice=None, following=False, request=None)
    assert 'id="close-duplicate-offer"' not in none
    unsigned = page.render(run=offered, viewer=None, notice=None, following=False, request=None)
    assert 'id="close-duplicate-offer"' not in unsigned
