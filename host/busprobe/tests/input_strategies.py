"""Generated inputs for the input properties (test_inputs_fuzz.py): text a user could type,
selectors and options built from the real grammar, result documents and host-profile TOML, each
mostly almost right, which is where a reader's checks are tested."""

import copy
import json
from pathlib import Path

from busprobe.model.usb2_hosts import PROFILE_DIR, SCHEMA
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "results"

# --- generated text -----------------------------------------------------------------------------

SEPARATORS = [",", "..", "?", "&", "=", "#", ":", ".", "/", "-", "+", " ", "\t", "\n", "%"]
GRAMMAR = SEPARATORS + ["K", "M", "G", "k", "iB", "B", "e", "0x", "nan", "inf", "usb", "pcie",
                        "sim", "usb2", "host", "gen", "mps", "mrrs", "toml", "ehci"]
NUMBERS = st.one_of(
    st.integers().map(str), st.integers(-(10**40), 10**40).map(str),
    st.floats().map(repr), st.floats().map(lambda f: f"{f:g}"),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e309", "-0", "0", "1_000",
                     "0x200", "\u0663", "\uff11\uff12", "4K", "512..4M", "9" * 5000]))
#: Text a user (or a script gone wrong) could type; no NUL, which no argv can hold.
CHARS = st.characters(exclude_characters="\x00")
JUNK = st.one_of(st.text(CHARS, max_size=16), st.just(""), NUMBERS,
                 st.text(st.sampled_from("0123456789abcdefKMGxX" + "".join(SEPARATORS)),
                         max_size=16),
                 st.lists(st.sampled_from(GRAMMAR) | NUMBERS, max_size=6).map("".join))


def _joined(items: st.SearchStrategy, sep: str = ",") -> st.SearchStrategy:
    return st.lists(items, min_size=1, max_size=5).map(sep.join)


SIZE = st.builds("{}{}{}{}{}".format, st.sampled_from(["", " ", "\t"]),
                 st.one_of(st.integers(0, 5000), st.sampled_from([1, 512, 4096, 2**20, 2**40]),
                           st.integers(-3, 3), NUMBERS),
                 st.sampled_from(["", "K", "M", "G", "k", "T", "KB", "KiB", "iB", "b"]),
                 st.sampled_from(["", " "]), st.just(""))
LENGTHS = st.one_of(JUNK, _joined(st.one_of(SIZE, st.builds("{}..{}".format, SIZE, SIZE),
                                            st.just(""), JUNK)))
COUNTS = st.one_of(JUNK, _joined(st.one_of(st.integers(-3, 2**20).map(str), JUNK,
                                           st.sampled_from(["", " 4", "8 ", "1e3", "+2"]))))

OPTION_VALUES = {
    "host": st.sampled_from(["ideal", "ehci", "xhci", "nope", "good.toml", "bad.toml",
                             "missing.toml", "folder.toml", "old.json", "../x.toml", "",
                             "x" * 300, str(PROFILE_DIR / "ehci.toml")]),
    "design": st.sampled_from(["busprobe", "stock", "luna"]),
    "level": st.sampled_from(["rtl", "netlist", "gates"]),
    "gen": st.sampled_from(["1", "2", "3", "4", "2.0", "02"]),
    "width": st.sampled_from(["1", "2", "16"]),
    "mps": st.sampled_from(["128", "256", "512", "1024", "100"]),
    "mrrs": st.sampled_from(["128", "512", "4096", "8192"]),
    "rcb": st.sampled_from(["64", "128", "32"]), "allow_config_write": st.sampled_from(["1", "no"]),
    "cap": NUMBERS, "latency_ns": NUMBERS,
}
OPTION = st.tuples(st.sampled_from(sorted(OPTION_VALUES)) | JUNK, st.sampled_from(["=", ""]),
                   st.sampled_from(sorted(OPTION_VALUES)).flatmap(OPTION_VALUES.get) | JUNK)
HEX = st.one_of(st.integers(-1, 0x1FFFF).map("{:04x}".format), JUNK)
TARGET = st.one_of(
    st.builds("{}:{}{}".format, HEX, HEX, st.sampled_from(["", "#"]) | JUNK.map("#{}".format)),
    st.builds("{:04x}:{:02x}:{:02x}.{}".format, st.integers(0, 0x10000), st.integers(0, 0x100),
              st.integers(0, 0x20), st.integers(0, 9)),
    st.sampled_from(["usb2", "pcie", "loop", "usb3", "", "0000:01:00.0", "1209:0001"]), JUNK)
SELECTOR = st.one_of(
    st.builds("{}:{}{}".format, st.sampled_from(["usb", "pcie", "sim", "SIM", "", "pci"]) | JUNK,
              TARGET, st.one_of(st.just(""), st.lists(OPTION, max_size=4).map(
                  lambda opts: "?" + "&".join(k + eq + v for k, eq, v in opts)))),
    st.sampled_from(["sim:usb2", "sim:pcie", "usb:1209:0001", "pcie:0000:01:00.0",
                     "sim:usb2?host=good.toml", "sim:usb2?host=ehci"]), JUNK)


# --- generated files ----------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
FIXTURE_DOCS = {p.name: json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))}
THROUGHPUT = st.one_of(st.floats(1e5, 6e8), st.floats(), st.integers(0, 10**400 // 10**380))
POINT = st.fixed_dictionaries(
    {"direction": st.sampled_from(["in", "out", "write", "read", "loopback"]) | JSON,
     "length": st.sampled_from([512, 4096, 65536]) | st.integers(), "errors": st.integers(0, 3),
     "queue_depth": st.sampled_from([1, 4]) | st.integers(), "throughput": THROUGHPUT,
     "throughput_min": THROUGHPUT, "throughput_max": THROUGHPUT},
    optional={"mps": st.sampled_from([128, 256, 512]) | JSON, "mrrs": st.integers() | JSON,
              "device_throughput": THROUGHPUT | JSON, "ceiling": THROUGHPUT | JSON,
              "efficiency": st.floats() | JSON, "link_efficiency": st.floats() | JSON,
              "queue_depth_in_force": st.integers() | JSON, "telemetry": st.dictionaries(
                  st.sampled_from(["in_tokens", "in_naks", "in_tokens_max_uframe", "in_packets",
                                   "data_uframes", "in_first_cycle", "in_last_cycle",
                                   "tx_stall_cycles", "wr_first_cycle", "wr_last_cycle",
                                   "rd_latency_count", "rd_latency_sum", "clock_hz"]),
                  st.integers() | st.floats() | JSON, max_size=5) | JSON})
BUS = st.one_of(
    st.fixed_dictionaries({"kind": st.just("usb2-hs"), "speed": st.just("high")},
                          optional={"host_profile": OPTION_VALUES["host"] | JSON,
                                    "max_packet_size": st.integers() | JSON, "extra": JSON}),
    st.fixed_dictionaries({"kind": st.just("pcie")},
                          optional={"speed": st.sampled_from(["gen1", "gen2", "gen3", "gen9"]),
                                    "width": st.integers() | st.floats() | JSON,
                                    "mps": st.integers() | JSON, "mrrs": st.integers() | JSON,
                                    "extra": JSON}), JSON)
GENERATED_DOC = st.fixed_dictionaries(
    {"busprobe_version": st.just("0.1.0") | JSON, "device": st.just("sim:usb2") | JSON,
     "bus": BUS, "points": st.lists(POINT, max_size=6) | JSON},
    optional={"schema": st.just(1) | JSON | st.floats(), "ceiling": JSON,
              "ceilings": st.lists(JSON, max_size=2) | JSON, "topology": JSON,
              "complete": JSON, "error": JSON, "display_units": JSON})


@st.composite
def mutated_fixture(draw: st.DrawFn) -> dict:
    """A real result document (tests/fixtures/results) with a few values replaced or deleted."""
    doc = copy.deepcopy(FIXTURE_DOCS[draw(st.sampled_from(sorted(FIXTURE_DOCS)))])
    for _ in range(draw(st.integers(1, 3))):
        node = doc
        while True:
            keys = sorted(node) if isinstance(node, dict) else range(len(node))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, dict | list) and child and draw(st.booleans()):
                node = child
                continue
            if isinstance(node, dict) and draw(st.integers(0, 4)) == 0:
                del node[key]
            else:
                node[key] = draw(JSON | THROUGHPUT | st.sampled_from([-1, 0, True, None]))
            break
    return doc


# Mostly documents that get past the first checks: that is where the readers' trust is tested.
DOC = st.one_of(GENERATED_DOC, mutated_fixture(), GENERATED_DOC, mutated_fixture(), JSON)


def _file_bytes(text: str) -> bytes:
    """``text`` as a file's bytes; a lone surrogate is the invalid UTF-8 it would be on disk."""
    return text.encode("utf-8", "surrogatepass")


DOC_FILE = st.one_of(DOC.map(lambda doc: _file_bytes(json.dumps(doc))),
                     DOC.map(lambda doc: _file_bytes(json.dumps(doc))),
                     st.text(CHARS, max_size=40).map(_file_bytes), st.binary(max_size=20))


def _toml(value: object) -> str:
    """``value`` as a TOML literal (inline tables and arrays; no writer in the stdlib)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(value), repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return value.isoformat()  # a date


def _toml_key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else json.dumps(key, ensure_ascii=False)


TOML_VALUE = st.one_of(st.integers(0, 14), st.floats(0, 2e6), st.booleans(), st.integers(),
                       st.floats(), st.text(max_size=6), st.dates(),
                       st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))
ENTRY = st.one_of(
    st.fixed_dictionaries({"value": TOML_VALUE},
                          optional={"source": st.text(max_size=8) | TOML_VALUE,
                                    "unit": st.just("ns")}), TOML_VALUE)
PROFILE = st.fixed_dictionaries(
    {}, optional={**{key: ENTRY for key in SCHEMA}, "name": st.just("fuzz") | TOML_VALUE,
                  "max_bulk_per_uframe": ENTRY}).map(
    lambda table: "\n".join(f"{_toml_key(k)} = {_toml(v)}" for k, v in table.items()))
PROFILE_FILE = st.one_of(PROFILE.map(_file_bytes), PROFILE.map(lambda text: _file_bytes(
    (PROFILE_DIR / "ehci.toml").read_text() + text)), st.binary(max_size=30),
                          st.text(CHARS, max_size=30).map(_file_bytes))
