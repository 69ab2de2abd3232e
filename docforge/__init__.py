"""docforge's surfaces: the CLI, the MCP server, the HTTP API and the Python API.

They call the core (`pipeline/`) and, to ingest, the Dagster shell (`orchestration/`).

    import docforge
    docforge.ask("How do I deploy?")      # also: docforge.aask, docforge.run_batch (docforge/api.py)
"""

_API = ("ask", "aask", "run_batch")


def __getattr__(name: str):
    # Lazy: the CLI imports this package too, and must not pay for the answer layer on every command.
    if name in _API:
        from docforge import api

        return getattr(api, name)
    raise AttributeError(f"module 'docforge' has no attribute {name!r}")
