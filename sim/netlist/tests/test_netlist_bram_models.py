"""busprobe's block RAM models (sim/hdl/ecp5_dp16kd.sv, ecp5_pdpw16kd.sv), each configuration
checked on its own against the datasheet's behaviour (the cocotb tests in bram_cocotb.py), before
any netlist relies on them."""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
TESTS = [
    "write_modes_decide_what_a_write_cycle_outputs",
    "a_read_is_synchronous_and_ce_low_holds_the_output",
    "port_b_reads_the_old_word_while_port_a_writes_it_on_the_same_edge",
    "x18_byte_enables_write_only_their_byte",
    "the_output_register_adds_a_cycle_and_loads_only_with_oce",
    "sync_reset_clears_the_output_on_an_edge_even_with_ce_low_and_keeps_the_array",
    "async_reset_clears_the_output_at_once",
    "initval_rows_hold_18_of_20_bits_and_x4_words_skip_each_bytes_ninth_bit",
    "a_9_bit_write_and_an_18_bit_read_share_one_array",
    "a_port_works_only_while_its_chip_selects_match_csdecode",
    "x36_words_with_four_byte_enables_in_dp16kd_and_pdpw16kd",
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from busprobe.sim.netlist.cells import PROJECT_MODELS
    from busprobe.sim.verilator_build import build_verilator_model

    sources = [HERE / "hdl" / "ecp5_bram_tb.sv",
               *sorted({source for _, source in PROJECT_MODELS.values()})]
    model = build_verilator_model("ecp5-bram-models", sources, "ecp5_bram_tb",
                                  public_ports_only=True)
    return run_cocotb_suite(model, tmp_path_factory.mktemp("bram"), module="bram_cocotb",
                            module_dir=HERE, toplevel="ecp5_bram_tb", testcases=TESTS)


@pytest.mark.sim
@pytest.mark.parametrize("name", TESTS)
def test_netlist_bram_model(results: dict, name: str) -> None:
    assert name in results, f"{name} did not run (simulator crashed?)"
    assert results[name] is None, results[name]
