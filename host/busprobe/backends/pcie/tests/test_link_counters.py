"""The soft endpoint's link registers as the host reads and shows them (no simulator: a BAR of
plain words)."""

from busprobe.backends.pcie.link_counters import ABSENT, COUNTERS, LinkCounters
from busprobe.protocol import pcie as proto
from busprobe.protocol.pcie_ltssm import LtssmState, state_name
from busprobe.results import format_table


class WordBar:
    """BAR0 as a dict of words; an unmapped CSR reads 0, as LiteX's."""

    def __init__(self, words: dict[int, int] | None = None) -> None:
        self.words = dict(words or {})

    def read32(self, offset: int) -> int:
        return self.words.get(offset, 0)


def soft_bar(status: int, **counters: int) -> WordBar:
    words = {proto.soft_link_csr("soft_link"): proto.SOFT_LINK_MAGIC,
             proto.soft_link_csr("status"): status}
    words.update({proto.soft_link_csr(name): value for name, value in counters.items()})
    return WordBar(words)


#: L0 (10), link up (bit 4), x1 (bits 5..10), Gen1 (bits 11..14).
L0_X1_GEN1 = 10 | 1 << 4 | 1 << 5 | 1 << 11


def test_the_link_registers_follow_the_six_every_phy_has_in_the_phy_region():
    offsets = [proto.soft_link_csr(name) for name, _ in proto.SOFT_LINK_CSRS]
    first = proto.CSRS["pcie_phy_phy_max_payload_size"] + 4
    assert offsets == list(range(first, first + 4 * len(offsets), 4))
    phy = proto.CSR_REGIONS["pcie_phy"] * proto.CSR_REGION_SIZE
    assert offsets[-1] < phy + proto.CSR_REGION_SIZE
    assert not set(offsets) & set(proto.CSRS.values())


def test_a_phy_without_the_registers_is_reported_absent_not_as_zeros():
    counters = LinkCounters(WordBar())
    counters.baseline()
    link = counters.read()
    assert link == {"present": False, "note": ABSENT}
    assert "counters" not in link


def test_a_points_counters_are_the_differences_since_its_baseline_across_the_wrap():
    bar = soft_bar(L0_X1_GEN1, replays=0xFFFE, naks=3)
    counters = LinkCounters(bar)
    counters.baseline()
    bar.words[proto.soft_link_csr("replays")] = 1  # wrapped: 3 more
    bar.words[proto.soft_link_csr("naks")] = 5
    link = counters.read()
    assert link["counters"]["replays"] == 3 and link["counters"]["naks"] == 2
    assert link["since_reset"]["replays"] == 1
    assert set(link["counters"]) == set(COUNTERS)
    assert (link["state"], link["link_up"], link["width"], link["speed"]) == \
        ("L0", True, 1, "gen1")


def test_state_names_are_spelled_as_the_spec_does():
    assert state_name(LtssmState.DETECT_QUIET) == "Detect.Quiet"
    assert state_name(LtssmState.RECOVERY_RCVRLOCK) == "Recovery.Rcvrlock"


def point(link: dict | None) -> dict:
    return {"direction": "write", "length": 4096, "queue_depth": 1, "throughput": 1e8,
            "repeats": [1e8, 1e8, 1e8], "errors": 0, "telemetry": {"link": link} if link else {}}


def table(*links: dict | None) -> list[str]:
    doc = {"points": [point(link) for link in links], "complete": True}
    return [line for line in format_table(doc).splitlines() if line.startswith("link:")]


def test_the_table_sums_the_points_counters_and_flags_replays():
    clean = LinkCounters(soft_bar(L0_X1_GEN1))
    clean.baseline()
    bar = soft_bar(L0_X1_GEN1)
    faulty = LinkCounters(bar)
    faulty.baseline()
    bar.words[proto.soft_link_csr("replays")] = 2
    (line,) = table(clean.read(), faulty.read())
    assert line.startswith("link: L0, up, x1 gen1; during the points:")
    assert "2 replays" in line and line.endswith("!!")
    (line,) = table(clean.read())
    assert "0 replays" in line and "!!" not in line


def test_the_table_says_when_the_phy_has_no_link_counters():
    assert table({"present": False, "note": ABSENT}) == [f"link: {ABSENT}"]
    assert table(None) == []
