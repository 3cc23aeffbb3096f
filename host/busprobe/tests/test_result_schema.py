"""The result document's published JSON Schema (``busprobe/schema/result.schema.json``): a valid
2020-12 schema that plain ``jsonschema`` (another tool's reading) applies as busprobe does, and
busprobe's own stricter reading of integers and numbers on top."""

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest
from busprobe.result_schema import DIRECTIONS, check_document, result_schema
from busprobe.schema import RESULT_SCHEMA

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "results"


@pytest.fixture(scope="module")
def fixture_doc():
    return json.loads((FIXTURES / "usb2_ideal.json").read_text())


def test_the_published_file_is_a_valid_2020_12_schema_found_through_the_package():
    schema = json.loads(RESULT_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"].endswith("/draft/2020-12/schema") and schema == result_schema()
    assert DIRECTIONS == ("in", "out", "write", "read", "loopback")  # read from the file


def test_every_shipped_result_fixture_is_valid_for_any_jsonschema_reader():
    fixtures = sorted(FIXTURES.glob("*.json"))
    assert len(fixtures) >= 3
    for path in fixtures:
        jsonschema.validate(json.loads(path.read_text()), result_schema())


@pytest.mark.parametrize("change", [
    lambda doc: doc["points"][0].update(direction="sideways"),
    lambda doc: doc["points"][0].update(length=-4),
    lambda doc: doc["bus"].pop("kind"),
    lambda doc: doc.update(ceiling={"direction": "in", "verdict": "fast", "explanation": ""}),
])
def test_a_broken_document_is_refused_by_plain_jsonschema_as_by_busprobe(fixture_doc, change):
    doc = copy.deepcopy(fixture_doc)
    change(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, result_schema())
    with pytest.raises(ValueError):
        check_document(doc)


def test_run_id_is_an_optional_string(fixture_doc):
    """Room for the results store's run identifier (issue 46)."""
    doc = copy.deepcopy(fixture_doc)
    check_document(doc)
    doc["run_id"] = "2026-12-02T06:00:00Z-host-1"
    check_document(doc)
    doc["run_id"] = 5
    with pytest.raises(ValueError, match=re.escape("result: run_id is 5, not str")):
        check_document(doc)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("length", 4096.0, "points[0].length is 4096.0, not int"),
    ("throughput", float("nan"), "points[0].throughput is nan, not number"),
    ("throughput", True, "points[0].throughput is True, not number"),
])
def test_busprobe_reads_integers_and_numbers_stricter_than_json_schema(fixture_doc, key, value,
                                                                       message):
    doc = copy.deepcopy(fixture_doc)
    doc["points"][0][key] = value
    with pytest.raises(ValueError, match=re.escape(f"result: {message}")):
        check_document(doc)


def test_of_several_violations_the_shallowest_is_named(fixture_doc):
    doc = copy.deepcopy(fixture_doc)
    doc["points"][0]["length"] = -1
    doc["device"] = None
    with pytest.raises(ValueError, match=re.escape("result: device is None, not str")):
        check_document(doc)
