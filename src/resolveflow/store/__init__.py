"""Postgres: pool, embedded server, migrations, named queries and one module per record."""
