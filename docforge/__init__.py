"""docforge's surfaces: the CLI, the MCP server and the HTTP API.

They call the core (`pipeline/`) and, to ingest, the Dagster shell (`orchestration/`).
"""
