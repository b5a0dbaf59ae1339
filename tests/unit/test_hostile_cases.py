"""Case files as an attack surface (issue #15): a case file arrives in a pull request and CI
runs it, so no case file may run code, exhaust the machine or crash the loader. Every
refusal is a clear error naming the file, the case and the key, with exit 2 in the CLI."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from runner_fakes import binary_case, case_file

from opbench.cases import CaseError, load_case_file
from opbench.cli import cli


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=True)


def assert_user_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


# -- 1. API paths that leave their framework --------------------------------------------------

@pytest.mark.parametrize("section, api", [
    ("torch", "torch.os.system"), ("torch", "torch.builtins.eval"),
    ("mindspore", "mindspore.context.os.system"), ("torch", "torch.Tensor.__class__"),
    ("torch", "torch.nn.functional.softmax.__globals__"), ("torch", "torch.load"),
    ("torch", "torch.utils.cpp_extension.load_inline"), ("mindspore", "Tensor.tofile"),
])
def test_an_api_path_out_of_its_framework_is_refused_at_load_time(tmp_path, section, api):
    apis = {"torch_api": "torch.add", "mindspore_api": "mindspore.add", f"{section}_api": api}
    path = case_file(tmp_path, binary_case("pwn", **apis))
    with pytest.raises(CaseError) as err:
        load_case_file(path)
    line = 6 if section == "torch" else 7
    assert str(err.value).startswith(f"{path}:{line} case 'pwn': key '{section}.api': {api}:")
    for command in ("list", "check"):
        assert_user_error(invoke(command, str(path)), "case 'pwn'", api)
    assert not (tmp_path / "PWNED").exists()


# -- 2. alias bombs, 9. deep nesting, 10. one parse ---------------------------------------------

def alias_bomb(levels: int = 30, inside_cases: bool = False) -> str:
    """Each level doubles: 2**levels values from ~levels lines."""
    lines = ["a0: &a0 [x, x]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]"
                                  for i in range(1, levels)]
    if inside_cases:
        body = "\n".join("    " + line for line in lines)
        return (f"cases:\n  - name: bomb\n    params:\n{body.replace('    a', '      a')}\n"
                "    torch: {api: torch.add}\n    mindspore: {api: mindspore.add}\n")
    return "\n".join(lines) + "\ncases: []\n"


@pytest.mark.parametrize("inside_cases", [False, True])
def test_an_alias_bomb_is_refused_quickly(tmp_path, inside_cases):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(inside_cases=inside_cases))
    with pytest.raises(CaseError, match=r"YAML aliases expand to more than 100,000 values"):
        load_case_file(path)
    assert_user_error(invoke("list", str(path)), f"{path}:", "alias bomb")


def test_shared_anchors_and_merge_keys_still_load(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text("defaults: &d {torch: {api: torch.add, args: [$x, $x]},\n"
                    "              mindspore: {api: mindspore.add, args: [$x, $x]}}\n"
                    "cases: []\n")
    path.write_text("cases:\n  - &first\n    name: a\n    inputs: {x: {shape: [2]}}\n"
                    "    torch: {api: torch.add, args: [$x, $x]}\n"
                    "    mindspore: {api: mindspore.add, args: [$x, $x]}\n"
                    "  - <<: *first\n    name: b\n")
    assert [c.name for c in load_case_file(path)] == ["a", "b"]


@pytest.mark.parametrize("levels", [65, 20_000, 300_000])
def test_deep_nesting_is_refused_without_a_traceback_or_a_crash(tmp_path, levels):
    # 20,000 levels: RecursionError in PyYAML; 300,000: a segfault in libyaml's composer
    path = tmp_path / "deep.yaml"
    path.write_text("cases: " + "[" * levels + "]" * levels + "\n")
    with pytest.raises(CaseError, match=r":1: nested more than 64 levels deep"):
        load_case_file(path)


def test_the_file_is_parsed_once_with_libyaml(tmp_path, monkeypatch):
    import yaml

    from opbench import case_yaml

    made = []
    real = case_yaml._EVENT_SOURCE
    monkeypatch.setattr(case_yaml, "_EVENT_SOURCE",
                        lambda text: made.append(real) or real(text))
    monkeypatch.setattr(yaml, "load", lambda *a, **k: pytest.fail("parsed a second time"))
    path = case_file(tmp_path, binary_case("add"))
    assert [c.name for c in load_case_file(path)] == ["add"]
    assert made == [yaml.CSafeLoader]


def test_an_empty_directory_says_it_holds_no_case_files(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_user_error(invoke("list", str(tmp_path / "empty")),
                      f"{tmp_path / 'empty'}: no case files (*.yaml, *.yml) in this directory")
