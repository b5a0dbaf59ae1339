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
