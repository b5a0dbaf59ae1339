"""Every name in the shipped mapping exists in the installed torch and MindSpore."""
from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

from opbench.frameworks.apimap import load_mapping

pytestmark = pytest.mark.integration

os.environ.setdefault("GLOG_v", "3")  # keep MindSpore's import chatter out of the output

_MISSING = object()


def resolve_dotted(name: str) -> Any:
    """Import the longest importable module prefix of `name`, then getattr the rest."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


@pytest.mark.parametrize("framework", ["torch", "mindspore"])
def test_every_mapped_name_resolves(framework):
    pytest.importorskip(framework)
    entries = load_mapping().entries
    names = [getattr(entry, framework) for entry in entries]
    if framework == "mindspore":
        names += [name for entry in entries for name in entry.alternatives]
    missing = [name for name in names if name is not None and resolve_dotted(name) is _MISSING]
    assert missing == []


def test_tensor_methods_map_to_tensor_attributes():
    pytest.importorskip("torch")
    pytest.importorskip("mindspore")
    import mindspore
    import torch

    for entry in load_mapping().entries:
        if entry.kind != "tensor_method":
            continue
        assert entry.torch.startswith("torch.Tensor.")
        assert hasattr(torch.Tensor, entry.torch.rsplit(".", 1)[1]), entry.torch
        if entry.mindspore and entry.mindspore.startswith("mindspore.Tensor."):
            assert hasattr(mindspore.Tensor, entry.mindspore.rsplit(".", 1)[1]), entry.mindspore


def test_resolver_rejects_missing_names():
    pytest.importorskip("torch")
    assert resolve_dotted("torch.no_such_api") is _MISSING
    assert resolve_dotted("torch.nn.functional.softmax") is not _MISSING
