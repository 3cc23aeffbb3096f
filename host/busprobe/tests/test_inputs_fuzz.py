"""Every input busprobe reads, tested as an input: generated values through the real parsers.

Each property drives one reader with generated text, numbers, TOML or JSON (junk, and values
built from the real grammar that are almost right) and asks the one thing a user can rely on:
the call succeeds, or it fails with the project's one-line error. For functions that is a
``ValueError`` or a :class:`~busprobe.transport.TransportError` whose ``str()`` is one line; for
the command line (``busprobe.cli.main``) exit status 2, exactly one stderr line starting
``busprobe: error:`` and no file changed. Never a traceback, never a hang.

The fast run is derandomized (the same examples every time, so CI is reproducible);
``BUSPROBE_FUZZ_EXAMPLES=N`` runs every property with ``N`` fresh random examples instead, which
is what the ``bench`` twin at the end does. ``sweep`` never reaches a simulator: the transport
factory is replaced by the in-process loopback (conftest.py) with a byte budget, and PCIe or
real targets stop the run where the device would be opened.
"""

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pytest
from busprobe import buses, targets
from busprobe.backends.pcie.sysfs_tree import ConfigSpec, SysfsTree
from busprobe.cli import main
from busprobe.lengths import parse_counts, parse_lengths, parse_size
from busprobe.model.usb2_hosts import PROFILE_DIR, SCHEMA, HostProfile, load_profile
from busprobe.results import load_results
from busprobe.selectors import parse_selector
from busprobe.tests.input_strategies import (
    CHARS,
    COUNTS,
    DOC_FILE,
    FIXTURES,
    JUNK,
    LENGTHS,
    OPTION_VALUES,
    PROFILE_FILE,
    SELECTOR,
    SIZE,
)
from busprobe.transport import TransportError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

#: Examples per property when the environment asks for a long run (``make bench``), else 0.
MANY = int(os.environ.get("BUSPROBE_FUZZ_EXAMPLES", "0"))
#: Wall-clock seconds after which an example counts as hung (the deadline is per example too).
HANG_SECONDS = 30


def fuzz(examples: int, deadline_ms: int = 2000) -> settings:
    """Settings of a property: ``examples`` derandomized examples, or ``MANY`` random ones."""
    return settings(max_examples=MANY or examples, derandomize=not MANY, database=None,
                    deadline=deadline_ms, print_blob=True,
                    # The function-scoped fixtures used (tmp_path, loopback classes) hold nothing
                    # an example changes: every example works in a fresh directory of its own.
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


# --- the checks ---------------------------------------------------------------------------------

def value_or_one_line_error(call, *args, **kwargs):
    """``call``'s value, or the error it raised if it is the project's one-line kind."""
    try:
        return call(*args, **kwargs)
    except (ValueError, TransportError) as exc:
        assert str(exc) and "\n" not in str(exc), repr(exc)
        return exc


class Hung(BaseException):
    """An example ran longer than :data:`HANG_SECONDS` (a BaseException: nothing may catch it)."""


class StoppedByTest(BaseException):
    """The sweep got past every check to where the test stops it (a PCIe or real device would
    be opened, or the loopback's byte budget is spent): the input was accepted."""


@contextlib.contextmanager
def time_limit(seconds: float):
    def hung(signum, frame):
        raise Hung(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) below ``root``."""
    found: dict[str, bytes | None] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(os.path.join(folder, name), root)] = None
        for name in files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = Path(path).read_bytes()
    return found


@contextlib.contextmanager
def workdir(parent: Path):
    """A fresh current directory with what outputs may collide with: a result, a profile, a
    folder, a file where a folder is expected."""
    with tempfile.TemporaryDirectory(dir=parent) as name, contextlib.chdir(name):
        work = Path(name)
        (work / "old.json").write_bytes((FIXTURES / "usb2_ideal.json").read_bytes())
        (work / "good.toml").write_bytes((PROFILE_DIR / "xhci.toml").read_bytes())
        (work / "bad.toml").write_text("max_bulk_in_per_uframe = 3\n")
        (work / "blocker").write_text("a file, not a folder")
        (work / "folder").mkdir()
        (work / "folder.toml").mkdir()
        yield work


def run_cli(work: Path, argv: list[str]) -> tuple[int | str, str, str]:
    """``main(argv)`` as a user sees it: exit status, stdout, stderr (with logging on it, as
    main's own logging set-up would put it), checked against the one-line error contract."""
    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    handler.setLevel(logging.WARNING)
    logging.getLogger().addHandler(handler)
    before = snapshot(work)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                time_limit(HANG_SECONDS):
            try:
                status: int | str = main(argv)
            except SystemExit as exc:  # what the console script turns into the exit status
                status = exc.code if isinstance(exc.code, int) else 1
            except StoppedByTest:
                status = "stopped"
    finally:
        logging.getLogger().removeHandler(handler)
    assert status in (0, 1, 2, "stopped"), (status, err.getvalue())
    if status in (2, "stopped"):  # refused (or stopped at the device): nothing may be written
        assert snapshot(work) == before
    if status == 2:
        assert err.getvalue().startswith("busprobe: error: "), err.getvalue()
        assert err.getvalue().count("\n") == 1 and err.getvalue().endswith("\n"), err.getvalue()
    return status, out.getvalue(), err.getvalue()


OUTPUT = st.one_of(st.sampled_from(["out.json", "r.csv", "p.png", "r.html", "folder", "old.json",
                                    "blocker/x.json", "new/sub/r.json", "-", "", ".", "..",
                                    "folder/", "good.toml"]),
                   st.text(CHARS.filter(lambda c: c != "/"), min_size=1, max_size=10).filter(
                       lambda name: name not in (".", "..")))


def options(**values: st.SearchStrategy) -> st.SearchStrategy:
    """Some of ``--name=value`` (or ``--name value``) in any order; ``True`` is a bare flag."""
    def render(name: str, value: object, glued: bool) -> list[str]:
        flag = "--" + name.replace("_", "-")
        return [flag] if value is True else [f"{flag}={value}"] if glued else [flag, str(value)]

    picks = [st.one_of(st.none(), st.tuples(st.just(k), v, st.booleans()))
             for k, v in values.items()]
    return st.tuples(*picks).flatmap(lambda chosen: st.permutations(
        [render(*c) for c in chosen if c is not None])).map(lambda parts: sum(parts, []))


def with_device(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """``--device SEL`` (mostly present: without it argparse refuses before anything else)."""
    device = st.one_of(st.builds(lambda s: [f"--device={s}"], SELECTOR),
                       st.builds(lambda s: ["--device", s], SELECTOR), st.just([]))
    return st.builds(lambda d, rest: d + rest, device, strategy)


def loopback_only(loopback_class: type, budget: int = 1 << 20):
    """A stand-in for :func:`busprobe.targets.open_transport`: USB targets get the loopback with
    ``budget`` bytes to move, anything else stops the run where the device would be opened."""
    class Budgeted(loopback_class):
        def stream(self, direction, length, count, queue_depth, source=None, sink=None):
            self.validate(direction, length, queue_depth)
            self.budget = getattr(self, "budget", budget) - length * count
            if self.budget < 0:
                raise StoppedByTest("the loopback's byte budget is spent")
            return super().stream(direction, length, count, queue_depth, source, sink)

    def open_transport(target):
        if target.spec is buses.USB2_HS:
            return Budgeted(target.text)
        raise StoppedByTest(f"{target.text} would be opened")
    return open_transport


UNITS = st.sampled_from(["mb", "mib", "MiB", "gb"]) | JUNK
DIRECTION = st.sampled_from(["in", "out", "both", "all", "write", "read", "loopback",
                             "in,out", "read,both", ""]) | JUNK
SYSFS = st.sampled_from(["sys", "folder", "missing", "blocker", "/sys"]) | JUNK
SWEEP = with_device(options(
    direction=DIRECTION, lengths=LENGTHS, queue_depth=COUNTS, repeat=st.integers(-1, 5) | JUNK,
    mps=COUNTS, mrrs=COUNTS, pattern=st.sampled_from(["counter", "prbs31", "PRBS-31"]) | JUNK,
    json=OUTPUT, csv=OUTPUT, plot=OUTPUT, units=UNITS, no_progress=st.just(True),
    allow_config_write=st.just(True)))
MODEL = with_device(options(
    direction=DIRECTION, mps=COUNTS | LENGTHS, mrrs=COUNTS | LENGTHS, length=SIZE | JUNK,
    queue_depth=st.integers(-2, 10**7) | JUNK, formula=st.just(True), units=UNITS,
    json=st.just(True), sysfs_root=SYSFS))
TOPOLOGY = with_device(options(json=st.just(True), sysfs_root=SYSFS))
INPUTS = st.lists(st.one_of(DOC_FILE, DOC_FILE, st.sampled_from(
    ["old.json", "missing.json", "folder", "blocker", "good.toml", ""])), min_size=0, max_size=3)


def fill(work: Path, inputs: list) -> list[str]:
    """Generated documents written to ``doc<i>.json``; names of other inputs as they are."""
    names = []
    for index, item in enumerate(inputs):
        if isinstance(item, bytes):
            (work / f"doc{index}.json").write_bytes(item)
            item = f"doc{index}.json"
        names.append(item)
    return names


# --- the properties -----------------------------------------------------------------------------

@fuzz(300, 500)
@given(st.one_of(SIZE, JUNK))
@example("9" * 5000)
def test_a_size_is_positive_or_refused_in_one_line(text):
    value = value_or_one_line_error(parse_size, text)
    assert isinstance(value, ValueError) or (type(value) is int and value > 0)


@fuzz(300, 500)
@given(LENGTHS)
def test_a_length_ladder_is_sorted_unique_and_positive_or_refused_in_one_line(text):
    value = value_or_one_line_error(parse_lengths, text)
    assert isinstance(value, ValueError) or (value and value == sorted(set(value)) > [0])


@fuzz(300, 500)
@given(COUNTS, st.sampled_from(["queue depth", "MPS"]))
def test_a_count_list_is_positive_and_unique_or_refused_in_one_line(text, what):
    value = value_or_one_line_error(parse_counts, text, what)
    assert isinstance(value, ValueError) or (
        len(set(value)) == len(value) and all(type(v) is int and v >= 1 for v in value))


@fuzz(300, 500)
@given(SELECTOR)
def test_a_selector_splits_into_its_parts_or_is_refused_in_one_line(text):
    value = value_or_one_line_error(parse_selector, text)
    assert isinstance(value, TransportError) or (
        value.text == text and value.scheme in buses.schemes())


@fuzz(300, 1000)
@given(SELECTOR, st.booleans())
def test_a_selector_is_described_or_refused_in_one_line(tmp_path, text, with_sysfs):
    with workdir(tmp_path) as work:
        if with_sysfs:
            tree = SysfsTree(work)
            tree.add_function("0000:00:01.0", ConfigSpec(mps=256))
            tree.add_function("0000:01:00.0", ConfigSpec(), parent="0000:00:01.0")
        value = value_or_one_line_error(targets.describe, text,
                                        sysfs_root=work / "sys" if with_sysfs else None)
    assert isinstance(value, TransportError | ValueError) or (
        value.text == text and (value.bus is not None or not value.simulated))


@fuzz(300, 1000)
@given(st.one_of(PROFILE_FILE, OPTION_VALUES["host"], JUNK))
def test_a_host_profile_loads_within_its_schema_or_is_refused_in_one_line(tmp_path, source):
    with workdir(tmp_path) as work:
        if isinstance(source, bytes):
            (work / "fuzz.toml").write_bytes(source)
            source = str(work / "fuzz.toml")
        value = value_or_one_line_error(load_profile, source)
    if isinstance(value, HostProfile):
        for key, (kind, low, high, _) in SCHEMA.items():
            assert type(getattr(value, key)) is kind and low <= getattr(value, key) <= high
    else:
        assert isinstance(value, ValueError)


@fuzz(300, 1000)
@given(DOC_FILE)
def test_a_result_file_loads_as_a_document_or_is_refused_in_one_line(tmp_path, content):
    with workdir(tmp_path) as work:
        (work / "r.json").write_bytes(content)
        value = value_or_one_line_error(load_results, work / "r.json")
    assert isinstance(value, ValueError) or (
        isinstance(value, dict) and isinstance(value["points"], list))


@fuzz(150, 10_000)
@given(SWEEP)
def test_sweep_arguments_measure_or_are_refused_in_one_line_before_anything_is_written(
        tmp_path, loopback_factory, argv):
    loopback, _ = loopback_factory
    with workdir(tmp_path) as work, \
            mock.patch.object(targets, "open_transport", loopback_only(loopback)):
        run_cli(work, ["sweep", *argv])


def _root_port_and_endpoint(work: Path, *, link_up: bool) -> None:
    """A sysfs tree under ``work`` with one root port and one endpoint below it."""
    tree = SysfsTree(work)
    tree.add_function("0000:00:01.0", ConfigSpec(mps=256))
    tree.add_function("0000:01:00.0", ConfigSpec(link_up=link_up), parent="0000:00:01.0")


@fuzz(150, 5000)
@given(MODEL)
def test_model_arguments_give_ceilings_or_are_refused_in_one_line(tmp_path, argv):
    with workdir(tmp_path) as work:
        _root_port_and_endpoint(work, link_up=True)
        run_cli(work, ["model", *argv])


@fuzz(150, 5000)
@given(TOPOLOGY)
def test_topology_arguments_give_hops_or_are_refused_in_one_line(tmp_path, argv):
    with workdir(tmp_path) as work:
        _root_port_and_endpoint(work, link_up=False)
        run_cli(work, ["topology", *argv])


@fuzz(100, 10_000)
@given(INPUTS, options(plot=OUTPUT, units=UNITS))
def test_compare_reads_result_files_or_refuses_them_in_one_line(tmp_path, inputs, argv):
    with workdir(tmp_path) as work:
        run_cli(work, ["compare", *fill(work, inputs), *argv])


@fuzz(60, 10_000)
@given(INPUTS, OUTPUT, st.booleans(), options(units=UNITS))
def test_report_reads_result_files_or_refuses_them_in_one_line(tmp_path, inputs, output, glued,
                                                              argv):
    with workdir(tmp_path) as work:
        names = fill(work, inputs)
        run_cli(work, ["report", *names, *([f"-o{output}"] if glued else ["-o", output]), *argv])


@pytest.mark.bench
def test_every_property_holds_for_thousands_of_random_examples(request):
    """The suite again with ``BUSPROBE_FUZZ_EXAMPLES`` (default 2000) random examples each."""
    examples = os.environ.get("BUSPROBE_FUZZ_EXAMPLES") or "2000"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m",
         "not sim and not bench", __file__], cwd=request.config.rootpath,
        env=dict(os.environ, BUSPROBE_FUZZ_EXAMPLES=examples), check=False)
    print(f"{examples} examples per property: {time.monotonic() - start:.0f} s")
    assert done.returncode == 0
