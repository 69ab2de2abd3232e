# docforge — `make demo` to see it work, `make test` to prove it.
VENV      ?= .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
# The CPU build of torch; an unpinned torch pulls a multi-GB CUDA build.
TORCH     ?= torch==2.13.0
QUERY     ?= How do I run the test suite?

export DOCFORGE_HOME ?= $(CURDIR)/.docforge
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export DAGSTER_HOME ?= $(CURDIR)

.PHONY: install demo lint test dev docs clean

install: $(STAMP)

$(STAMP): pyproject.toml deploy/constraints.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet $(TORCH)
	$(VENV)/bin/pip install --quiet -c deploy/constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: install
	$(VENV)/bin/docforge ingest
	$(VENV)/bin/docforge search "$(QUERY)" --limit 3
	@echo
	@echo "An embedded Postgres is running, holding the index under $(DOCFORGE_HOME)/pg."
	@echo "Stop it with: $(VENV)/bin/docforge db stop   (make clean: stop it and remove the index)"
	@echo
	@echo "For the README's commands (a bare docforge), first: source $(VENV)/bin/activate"
	@echo "To search and ask in a browser: DOCFORGE_API_TOKENS=<a token> $(VENV)/bin/docforge serve --api"
	@echo "then open http://127.0.0.1:8000/ and log in with that token (docs/web.md)."

# Style, types of the core, and the one-way layers (import-linter contracts in pyproject.toml).
lint: install
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The browser tests need Debian's chromium + chromium-driver (.ci/run installs them); else they skip.
test: lint
	$(PY) -m pytest

dev: install
	set -m; $(VENV)/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

docs: install
	$(PY) docs/cli_help.py > docs/cli.md

clean:
	-$(VENV)/bin/docforge db stop
	rm -rf $(DOCFORGE_HOME)
