"""Host-controller profiles have a schema: types, units, ranges; errors name the file and key."""

import pytest
from busprobe.model.usb2_hosts import PROFILE_DIR, SCHEMA, builtin_profiles, load_profile

GOOD = (PROFILE_DIR / "xhci.toml").read_text()


def profile(tmp_path, text):
    path = tmp_path / "my_host.toml"
    path.write_text(text)
    return str(path)


def with_value(key, value):
    lines = [f"{key} = {{ value = {value}, source = \"test\" }}" if line.startswith(key + " ")
             else line for line in GOOD.splitlines()]
    return "\n".join(lines)


def test_every_shipped_profile_satisfies_the_schema():
    for name in builtin_profiles():
        assert load_profile(name).name == name


@pytest.mark.parametrize("key, value, message", [
    ("max_bulk_in_per_uframe", "10.5", "must be a whole number (packets per microframe)"),
    ("max_bulk_in_per_uframe", "14", "is outside 1..13 packets per microframe"),
    ("max_bulk_out_per_uframe", '"ten"', "must be a whole number"),
    ("max_bulk_out_per_uframe", "true", "must be a whole number"),
    ("completion_latency_us", "nan", "is outside 0..1e+06 µs"),
    ("completion_latency_us", "-1.0", "is outside 0..1e+06 µs"),
    ("resubmit_latency_us", "inf", "is outside"),
    ("inter_transaction_gap_ns", '"500"', "must be a number (ns)"),
    ("completion_on_uframe", "1", "must be true or false"),
])
def test_a_bad_value_is_one_line_naming_the_file_and_the_key(tmp_path, key, value, message):
    path = profile(tmp_path, with_value(key, value))
    with pytest.raises(ValueError) as info:
        load_profile(path)
    text = str(info.value)
    assert f"host profile {path}: {key}" in text and message in text and "\n" not in text


def test_whole_floats_are_counts_and_integers_are_durations(tmp_path):
    loaded = load_profile(profile(tmp_path, with_value("max_bulk_in_per_uframe", "12.0")))
    assert loaded.max_bulk_in_per_uframe == 12 and type(loaded.max_bulk_in_per_uframe) is int
    loaded = load_profile(profile(tmp_path, with_value("completion_latency_us", "20")))
    assert loaded.completion_latency_us == 20.0 and type(loaded.completion_latency_us) is float


def test_unknown_keys_and_fields_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown key.s. max_bulk_per_uframe"):
        load_profile(profile(tmp_path, GOOD + "\nmax_bulk_per_uframe = { value = 3 }\n"))
    text = GOOD.replace('completion_on_uframe    = { value = false,',
                        'completion_on_uframe    = { value = false, unit = "x",')
    assert text != GOOD
    with pytest.raises(ValueError, match="completion_on_uframe has unknown field.s. unit"):
        load_profile(profile(tmp_path, text))


def test_a_missing_key_says_how_to_write_it(tmp_path):
    text = "\n".join(line for line in GOOD.splitlines()
                     if not line.startswith("resubmit_latency_us"))
    with pytest.raises(ValueError, match="resubmit_latency_us needs a table with value and source"):
        load_profile(profile(tmp_path, text))


def test_the_schema_covers_every_profile_parameter():
    from dataclasses import fields

    from busprobe.model.usb2_hosts import HostProfile

    assert set(SCHEMA) == {f.name for f in fields(HostProfile)} - {"name", "sources"}
