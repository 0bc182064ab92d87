# Two commands on a fresh machine: `make demo` and `make test`. Each sets up what it needs
# (virtualenv, packages, testenv binaries) once, and is quiet when that is already done.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# import-linter lives in a venv of its own: it pulls in rich, and structlog imports rich whenever
# it is installed, which would make every process the tests start heavier than a user's.
LINTVENV := $(VENV)/lint
LINTSTAMP := $(LINTVENV)/.installed

.PHONY: demo test lint unit binaries image setup clean docs

setup: $(STAMP)

# editable_mode=compat: a path in a .pth file, which mypy follows (setuptools' default import
# hook for this flat layout is invisible to type checkers, in this checkout and in users' projects).
$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "setting up $(VENV) (log: $(VENV)/install.log)"
	@( $(BIN)/python -m pip install --disable-pip-version-check --upgrade pip \
	   && $(BIN)/python -m pip install --disable-pip-version-check -e '.[dev]' \
	        --config-settings editable_mode=compat ) \
	   > $(VENV)/install.log 2>&1 || { tail -40 $(VENV)/install.log; exit 1; }
	@touch $@

$(LINTSTAMP):
	@test -x $(LINTVENV)/bin/python || $(PYTHON) -m venv $(LINTVENV)
	@$(LINTVENV)/bin/python -m pip install --disable-pip-version-check -q 'import-linter>=2.1' \
	   > $(LINTVENV)/install.log 2>&1 || { tail -40 $(LINTVENV)/install.log; exit 1; }
	@touch $@

# Finds kube-apiserver/etcd/kubectl like envtest does, else builds them once from the Go module proxy.
binaries: $(STAMP)
	@$(BIN)/reconcile testenv install --quiet --helm

# The controller-manager's OCI image, built offline from Debian's packages (mmdebstrap, umoci:
# installed here when missing) and cached by content; prints its name, archive and size.
image: $(STAMP)
	@command -v mmdebstrap >/dev/null && command -v umoci >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq mmdebstrap umoci podman >/dev/null; }
	@$(BIN)/python deploy/image/build.py

lint: $(STAMP) $(LINTSTAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	PYTHONPATH=. $(LINTVENV)/bin/lint-imports

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

test: lint binaries image
	$(BIN)/pytest -q

# The API reference, HTML from the docstrings (pdoc), into build/api; docs/api.md says what is in it.
# tests/unit/test_api_reference.py builds the same modules and fails on any warning.
API_MODULES := reconcile reconcile.webhook reconcile.multicluster reconcile.sharding reconcile.rbac reconcile.api reconcile.scaffold testenv testenv.plugin
docs: $(STAMP)
	$(BIN)/python -m pdoc --docformat google --output-directory build/api $(API_MODULES)

demo: binaries
	@$(BIN)/reconcile demo

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
