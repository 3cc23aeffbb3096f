# Two commands do everything on a fresh machine: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTHON ?= python3
# Builds (simulators, bitstreams) stay in this checkout's build/, shared by demo, test and bench;
# an installed busprobe without this variable uses ~/.cache/busprobe.
export BUSPROBE_BUILD_DIR ?= $(CURDIR)/build

.PHONY: demo test bench lint install clean

# The HTML report is checked in a real headless browser; on a Debian machine where we are root,
# the setup installs it (a test that skips for want of it would check nothing).
$(STAMP): pyproject.toml setup.py
	@command -v chromium >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null \
		|| { echo "installing chromium (Debian) for the report test"; apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		chromium >/dev/null; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

install: $(STAMP)

# The simulation runs ~250-320 k cycles/s (~3 ms of USB time per second of wall time) and every
# point moves 3 x 256 KiB: eight lengths in both directions take about a minute on an idle
# machine, plus a one-time model build. `make bench` times this same ladder
# (sim/usb2/tests/test_bench_usb2.py). The default ladder (512 B..4 MiB) is for hardware.
demo: $(STAMP)
	mkdir -p demo
	$(VENV)/bin/busprobe sweep --device sim:usb2 --direction both --lengths 512..64K \
		--json demo/usb2.json --csv demo/usb2.csv --plot demo/usb2.png

lint: $(STAMP)
	$(VENV)/bin/ruff check host gateware sim tests

test: lint
	$(PY) -m pytest -m "not bench" -n 2 --dist loadfile

bench: $(STAMP)
	$(PY) -m pytest -m bench -s -p no:cacheprovider

clean:
	rm -rf build demo sim_build
