"""Input limits and run limits of the loader (docs/design.md "Input limits"): every hostile input is a
`ValidationError` naming the file, the line and the field; every value `run` would refuse after starting processes
is refused by `validate`. How fast each refusal is, benchmarks/hostile_input_bench.py prints (no timed test: a
loaded 2-core machine breaks any margin)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import Problem, ValidationError
from harness.experiment import load_experiments, load_experiments_text
from harness.experiment.durations import parse_duration
from harness.experiment.limits import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MAX_PROBLEMS,
)

HEAD = "name: x\nduration: 60s\n"


def problems_of(text: str, file: str = "m.yaml") -> list[Problem]:
    with pytest.raises(ValidationError) as info:
        load_experiments_text(text, file)
    return info.value.problems


def assert_problem(problems: list[Problem], line: int, field: str, fragment: str, file: str = "m.yaml") -> Problem:
    """One problem at `file:line` about `field` whose rendering holds `fragment`."""
    for p in problems:
        text = p.render()
        if p.file == file and p.line == line and p.field == field and fragment in text:
            assert text.startswith(f"{file}:{line}:") and f": {field or '<document>'}: " in text
            return p
    raise AssertionError(f"no problem at {file}:{line} {field} with {fragment!r}; got:\n"
                         + "\n".join(p.render() for p in problems))


# -- the bytes of the file -------------------------------------------------------------------------

def _load_file(path: Path) -> list[Problem]:
    with pytest.raises(ValidationError) as info:
        load_experiments(path)
    return info.value.problems


def test_a_binary_file_is_refused_at_the_line_of_its_first_nul(tmp_path: Path) -> None:
    path = tmp_path / "image.yaml"
    path.write_bytes(b"name: x\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (p,) = _load_file(path)
    assert_problem([p], 4, "", "binary file: a NUL byte at offset 16", file=str(path))


def test_a_file_that_is_not_utf8_is_refused_at_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: x\nduration: 10s\ndescription: caf\xe9\n".encode("latin-1"))
    (p,) = _load_file(path)
    assert_problem([p], 3, "", "not UTF-8 text: byte(s) e9", file=str(path))
    assert p.column == 17


def test_a_file_over_the_size_limit_is_refused_without_being_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(HEAD.encode() + b"description: " + b"a" * MAX_FILE_BYTES + b"\n")
    (p,) = _load_file(path)
    assert_problem([p], 3, "", "larger than 1048576 bytes", file=str(path))
    assert_problem(problems_of(HEAD + "description: " + "é" * (MAX_FILE_BYTES // 2 + 1)), 3, "", "larger than")


@pytest.mark.parametrize(("char", "name"), [("\x01", "U+0001"), ("\x00", "NUL (a binary file?)"), ("\ud800", "U+D800"),
                                            ("\ufffe", "U+FFFE")])
def test_characters_yaml_forbids_are_refused_at_their_line(char: str, name: str) -> None:
    assert_problem(problems_of(f"{HEAD}description: a{char}b\n"), 3, "", f"character {name} is not allowed")


# -- the shape of the document ---------------------------------------------------------------------

def test_deep_nesting_is_refused_at_the_level_that_crosses_the_limit() -> None:
    found = problems_of(HEAD + "cluster: " + "[" * 5000 + "]" * 5000 + "\n")
    p = assert_problem(found, 3, found[0].field, f"nesting deeper than {MAX_DEPTH} levels")
    assert p.field.startswith("cluster[0][0][0]") and p.column == 10 + MAX_DEPTH - 1


def test_nesting_of_mappings_names_the_keys_and_the_limit_itself_is_allowed() -> None:
    def nested(depth: int) -> str:
        return "{a: " * (depth - 1) + "1" + "}" * (depth - 1)

    (p,) = problems_of(f"{HEAD}description: {nested(MAX_DEPTH + 1)}\n")
    assert_problem([p], 3, p.field, "nesting deeper than")
    assert p.field.startswith("description.a.a.a") and p.field.endswith(".a.a.a") and "..." in p.field
    # at the limit the guard lets it through, and the field reader says what is wrong with it
    assert_problem(problems_of(f"{HEAD}description: {nested(MAX_DEPTH)}\n"), 3, "description", "must be a string")


BOMB = "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10 if i else ["lol"] * 10) + "]\n" for i in range(10))


def test_an_alias_bomb_is_refused_at_the_alias_that_crosses_the_budget() -> None:
    found = problems_of(BOMB)
    (p,) = found
    assert_problem(found, 4, "a3[7]", "alias *a2 expands to 1111 nodes")
    assert f"more than {MAX_NODES} nodes" in p.message


def test_an_alias_that_contains_itself_is_refused() -> None:
    assert_problem(problems_of(f"{HEAD}description: &d [1, *d]\n"), 3, "description[1]", "alias *d refers to an "
                   "anchor that contains it")


def test_an_alias_may_not_nest_past_the_limit_either() -> None:
    deep = "[" * 40 + "]" * 40
    (p,) = problems_of(f"{HEAD}a: &deep {deep}\nb: {'[' * 30}*deep{']' * 30}\n")
    assert_problem([p], 4, p.field, "alias *deep expands to nesting deeper than 64 levels")
    assert p.field.startswith("b[0][0][0]") and p.column == 34


def test_a_document_of_too_many_nodes_is_refused() -> None:
    found = problems_of(HEAD + "steady_state: [" + ", ".join(["x"] * MAX_NODES) + "]\n")
    # the root, 5 scalars before the list, the list: the item that is node MAX_NODES + 1 is refused
    assert_problem(found, 3, f"steady_state[{MAX_NODES - 7}]", f"more than {MAX_NODES} nodes")


def test_a_small_experiment_with_aliases_loads() -> None:
    text = ("name: x\nduration: 60s\ntopics: [{name: t}]\nx-config: &cfg {linger.ms: 5}\n"
            "workload: {producers: [{topic: t, config: *cfg}, {topic: t, config: *cfg}]}\n")
    found = problems_of(text)  # x-config is an unknown key; the aliases themselves are fine
    assert [p.field for p in found] == ["x-config"]


# -- scalars PyYAML cannot convert -----------------------------------------------------------------

@pytest.mark.parametrize(("value", "fragment"), [
    ("9" * 150, "a number of more than 100 characters"),
    (":".join(["59"] * 60), "a number of more than 100 characters"),
    ("!!int abc", "cannot read the value as int"),
    ("2001-02-30", "cannot read the value as timestamp: day is out of range"),
    ("!!float x", "cannot read the value as float"),
])
def test_a_scalar_that_cannot_be_converted_is_a_problem_at_its_line(value: str, fragment: str) -> None:
    assert_problem(problems_of(f"{HEAD}seed: {value}\n"), 3, "seed", fragment)


def test_merge_keys_are_refused_with_a_hint() -> None:
    found = problems_of(f"{HEAD}a: &a {{rate: 1}}\nverify: {{<<: *a}}\n")
    assert_problem(found, 4, "verify", "merge keys (<<) are not supported")


def test_problems_are_capped_and_counted() -> None:
    found = problems_of(HEAD + "".join(f"k{i}: 1\n" for i in range(300)))
    assert len(found) == MAX_PROBLEMS + 1 and found[-1].message == "... and 200 more problem(s)"


def test_long_bad_values_are_clipped_in_messages() -> None:
    (p,) = problems_of(f"{HEAD}seed: {'x' * 100_000}\n")
    assert len(p.render()) < 400 and "(100000 characters)" in p.render()


def test_durations_parse_in_linear_time_and_refuse_long_texts() -> None:
    for text in ("1" * 100_000, "1" * 60, "1s" * 40):
        with pytest.raises(ValueError):
            parse_duration(text)
    assert parse_duration("1h" + "0s" * 20) == 3600.0
