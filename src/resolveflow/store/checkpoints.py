"""The LangGraph checkpoint saver on the application's Postgres."""

from __future__ import annotations

from typing import Any

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg_pool import ConnectionPool


def checkpoint_saver(conn: psycopg.Connection[Any] | ConnectionPool[Any]) -> PostgresSaver:
    return PostgresSaver(conn)
