"""PCIe Gen2 x1 DMA throughput in simulation against busprobe's closed-form ceiling model.

``make bench`` runs these (``-m bench``); each prints one line per point. The device must not be
the limit: writes within 3 % of the model at every MPS (and MPS 256 above MPS 128), reads with
MRRS 512 within 5 %, a 290 MiB/s root cap gives a 290 MiB/s plateau (3 %) with link backpressure
in the telemetry, and no pattern errors anywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.model.pcie import pcie_ceiling
from busprobe.transport import BusDescription

HERE = Path(__file__).resolve().parent
COCOTB_MODULE = "pcie_core_cocotb"
LENGTH = 256 * 1024
MIB = 1 << 20
_results: dict[tuple, dict] = {}

#: What the simulated link is, for the model (see busprobe.sim.pcie.testbench): cocotbext-pcie
#: sends no SKP ordered sets, ACKs and updates flow control once per read request, and its root
#: completes reads with the largest TLPs MPS allows (RCB-aligned).
SIM_LINK = {"skp": False, "split_at_rcb": False, "rcb": 64, "ack_every": 1, "updatefc_every": 1}



def measure(model: Path, direction: str, **params) -> dict:
    from busprobe.sim.pcie.runner import run_cocotb

    key = (direction, tuple(sorted(params.items())))
    if key not in _results:
        name = "-".join(f"{k}{v}" for k, v in sorted(params.items()))
        (result,) = run_cocotb(model, HERE, COCOTB_MODULE, "throughput", f"{direction}-{name}",
                               direction=direction, length=LENGTH, chunk=64 * 1024, **params)
        _results[key] = result
    return _results[key]


def model_throughput(direction: str, mps: int, mrrs: int = 512) -> float:
    bus = BusDescription(kind="pcie", speed="gen2", width=1, mps=mps, mrrs=mrrs, extra=SIM_LINK)
    return pcie_ceiling(bus, direction).throughput


def show(label: str, result: dict, model: float | None) -> None:
    tel = result["telemetry"]
    ratio = f"{result['throughput'] / model * 100:6.1f} % of model {model / 1e6:6.1f}" \
        if model else ""
    print(f"\n{label}: {result['throughput'] / 1e6:6.1f} MB/s host-timed, "
          f"{result['device_throughput'] / 1e6:6.1f} MB/s device-timed {ratio} MB/s; "
          f"tx stalls {tel['tx_stall_cycles']}, rx stalls {tel['rx_stall_cycles']}, "
          f"{result['sim_cycles_per_s']:.0f} sim cycles/s, {result['wall_s']:.1f} s wall")


@pytest.mark.bench
@pytest.mark.sim
@pytest.mark.parametrize("mps", [128, 256, 512])
def test_write_throughput_is_within_3_percent_of_the_model(pcie_model, mps):
    result = measure(pcie_model, "write", mps=mps)
    model = model_throughput("write", mps)
    show(f"write MPS {mps}", result, model)
    assert result["errors"] == 0
    assert abs(result["throughput"] / model - 1) <= 0.03


@pytest.mark.bench
@pytest.mark.sim
def test_write_throughput_grows_from_mps_128_to_256(pcie_model):
    assert measure(pcie_model, "write", mps=256)["throughput"] > \
        measure(pcie_model, "write", mps=128)["throughput"]


@pytest.mark.bench
@pytest.mark.sim
@pytest.mark.parametrize("mps", [128, 256, 512])
def test_read_throughput_with_mrrs_512_is_within_5_percent_of_the_model(pcie_model, mps):
    result = measure(pcie_model, "read", mps=mps, mrrs=512)
    model = model_throughput("read", mps, 512)
    show(f"read MPS {mps} MRRS 512", result, model)
    assert result["errors"] == 0
    assert abs(result["throughput"] / model - 1) <= 0.05


@pytest.mark.bench
@pytest.mark.sim
@pytest.mark.parametrize("direction", ["write", "read"])
def test_a_290_mib_s_root_cap_is_the_plateau_and_shows_as_backpressure(pcie_model, direction):
    cap = 290 * MIB
    result = measure(pcie_model, direction, mps=256, mrrs=512, cap=cap)
    show(f"{direction} capped at 290 MiB/s", result, cap)
    assert result["errors"] == 0
    assert abs(result["throughput"] / cap - 1) <= 0.03
    if direction == "write":  # the link (out of credits) held the core back
        assert result["telemetry"]["tx_stall_cycles"] > 0
