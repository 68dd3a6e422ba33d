"""``/api/docs``: the JSON API described as a plain page, rendered here from the OpenAPI schema.

FastAPI's default docs page loads Swagger UI from a CDN, which the app's own Content-Security-Policy
blocks (and many deployments have no internet). This page needs nothing but this server: each
operation with its parameters, request body and responses, and a link to ``/api/openapi.json`` for
tools. Also the favicon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

router = APIRouter(include_in_schema=False)
FAVICON = Path(__file__).resolve().parent / "static" / "favicon.svg"
_METHODS = ("get", "post", "put", "patch", "delete")


@router.get("/api/docs")
def api_docs(request: Request) -> Response:
    schema = request.app.openapi()
    operations = [
        _operation(path, method, spec, schema)
        for path, item in schema.get("paths", {}).items()
        for method, spec in item.items()
        if method in _METHODS
    ]
    response: Response = request.app.state.templates.TemplateResponse(
        request,
        "api_docs.html",
        {"viewer": None, "info": schema.get("info", {}), "operations": operations},
    )
    return response


@router.get("/favicon.ico")
def favicon() -> FileResponse:
    return FileResponse(FAVICON, media_type="image/svg+xml")


def _operation(path: str, method: str, spec: dict[str, Any], schema: dict[str, Any]) -> Any:
    body = (spec.get("requestBody") or {}).get("content", {}).get("application/json", {})
    return {
        "id": f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", ""),
        "method": method,
        "path": path,
        "summary": spec.get("summary") or "",
        "description": spec.get("description") or "",
        "parameters": [
            {
                "name": p.get("name", ""),
                "in": p.get("in", ""),
                "required": bool(p.get("required")),
                "type": _type(p.get("schema") or {}, schema),
            }
            for p in spec.get("parameters") or []
        ],
        "body": _fields(body.get("schema") or {}, schema),
        "responses": sorted((spec.get("responses") or {}).keys()),
    }


def _resolve(node: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        found: dict[str, Any] = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
        return found
    return node


def _type(node: dict[str, Any], schema: dict[str, Any]) -> str:
    node = _resolve(node, schema)
    if "anyOf" in node:
        return " or ".join(_type(choice, schema) for choice in node["anyOf"])
    if node.get("type") == "array":
        return f"list of {_type(node.get('items') or {}, schema)}"
    return str(node.get("type") or node.get("title") or "object")


def _fields(node: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    node = _resolve(node, schema)
    required = set(node.get("required") or ())
    return [
        {"name": name, "type": _type(prop, schema), "required": name in required}
        for name, prop in (node.get("properties") or {}).items()
    ]
