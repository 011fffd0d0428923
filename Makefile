# raybridge — the two commands: `make test` and `make demo` (both build .venv from nothing).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)

.PHONY: venv test test-fast test-spark4 demo lint bench bench-small clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -c constraints.txt -e '.[all,test]'
	rm -f $(VENV)/.installed-*
	touch $@

test: venv
	$(PY) -m pytest tests integration -q

# The Spark paths again under pyspark 4.x, in a venv of their own (the main one pins pyspark 3.5 for RayDP):
# the same exact pins, but pyspark and its py4j.
SPARK4_PINS := pyspark==4.3.0 py4j==0.10.9.9
SPARK4_TESTS := tests/test_fidelity.py -k spark tests/test_spark_session_errors.py integration/test_spark_local.py \
	integration/test_spark_conversions.py integration/test_spark_etl_handoff.py integration/test_spark_result_size.py \
	integration/test_spark_types_s43.py
VENV4  := .venv-spark4
STAMP4 := $(VENV4)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)

$(STAMP4): pyproject.toml constraints.txt
	test -x $(VENV4)/bin/python || $(PYTHON) -m venv $(VENV4)
	$(VENV4)/bin/python -m pip install -q -U pip
	grep -v '^pyspark==\|^py4j==' constraints.txt > $(VENV4)/constraints.txt
	printf '%s\n' $(SPARK4_PINS) >> $(VENV4)/constraints.txt
	$(VENV4)/bin/python -m pip install -q -c $(VENV4)/constraints.txt -e '.[spark,dask,torch,test]' $(SPARK4_PINS)
	rm -f $(VENV4)/.installed-*
	touch $@

# One JVM serves every session of the run; Spark 4's default 1 GiB heap ran out once in the
# 156 MiB to_spark test, so the driver gets 2 GiB here (a ceiling, not a reservation).
test-spark4: $(STAMP4)
	PYSPARK_SUBMIT_ARGS="--driver-memory 2g pyspark-shell" \
	$(VENV4)/bin/python -m pytest -q -p no:cacheprovider $(SPARK4_TESTS)

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
	rm -rf $(VENV) $(VENV4) .pytest_cache .mypy_cache .ruff_cache demo_out
