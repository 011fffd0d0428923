# raybridge — the two commands: `make test` and `make demo` (both build .venv from nothing).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)

.PHONY: venv test test-fast demo lint bench bench-small clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -c constraints.txt -e '.[all,test]'
	rm -f $(VENV)/.installed-*
	touch $@

test: venv
	$(PY) -m pytest tests integration -q

test-fast: venv
	$(PY) -m pytest tests -q -x

demo: venv
	$(PY) -m integration.demo

lint: venv
	$(VENV)/bin/ruff check bridge adapters tests integration
	$(VENV)/bin/mypy bridge adapters

bench: venv
	$(PY) -m integration.bench --scale full

bench-small: venv
	$(PY) -m integration.bench --scale small

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache demo_out
