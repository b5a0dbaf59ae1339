"""Replacing attributes and undoing it exactly; the post-import hook."""
from __future__ import annotations

import importlib
import sys
import types

from opbench.trace.import_hook import PostImportHook
from opbench.trace.patching import PatchSet, is_wrapper, lookup_static, make_wrapper


class Base:
    def method(self):
        return "base"

    @staticmethod
    def helper():
        return "static"


class Child(Base):
    def own(self):
        return "own"


def snapshot(owner):
    return dict(vars(owner))


def test_restore_puts_own_attributes_back_and_removes_added_ones():
    module = types.ModuleType("fake_module")
    module.f = lambda: "f"
    before_module, before_child, before_base = snapshot(module), snapshot(Child), snapshot(Base)
    patches = PatchSet()
    patches.replace(module, "f", lambda: "wrapped")
    patches.replace(Child, "own", lambda self: "wrapped own")
    patches.replace(Child, "method", lambda self: "wrapped inherited")   # not in Child's dict
    patches.replace(Child, "__add__", lambda self, other: "added")
    assert Child().method() == "wrapped inherited" and Child() + 1 == "added"
    assert patches.restore() == []
    assert snapshot(module) == before_module
    assert snapshot(Child) == before_child and snapshot(Base) == before_base
    assert Child().method() == "base" and "method" not in vars(Child)
    assert len(patches) == 0


def test_original_gives_the_unwrapped_attribute():
    patches = PatchSet()
    original = vars(Child)["own"]
    patches.replace(Child, "own", lambda self: "x")
    patches.replace(Child, "method", lambda self: "y")
    try:
        assert patches.original(Child, "own") is original
        assert patches.original(Child, "method") is vars(Base)["method"]
    finally:
        patches.restore()


def test_restore_keeps_going_past_a_failure():
    class Frozen:
        value = 1

    patches = PatchSet()
    patches.replace(Frozen, "value", 2)
    patches.replace(Child, "own", lambda self: "x")
    patches._patches.insert(0, (object(), "nope", None))   # cannot be restored
    problems = patches.restore()
    assert len(problems) == 1 and "nope" in problems[0]
    assert Frozen.value == 1 and Child().own() == "own"


def test_lookup_static_returns_raw_descriptors():
    assert isinstance(lookup_static(Child, "helper"), staticmethod)
    assert lookup_static(Child, "method") is vars(Base)["method"]
    assert lookup_static(Child, "missing") is None


def test_wrappers_look_like_the_original_and_are_recognisable():
    def original(x):
        """Doc."""
        return x

    wrapper = make_wrapper(original, lambda *a, **k: original(*a, **k))
    assert wrapper.__name__ == "original" and wrapper.__doc__ == "Doc."
    assert wrapper.__wrapped__ is original and is_wrapper(wrapper) and not is_wrapper(original)
    builtin_wrapper = make_wrapper(len, lambda *a: len(*a))
    assert builtin_wrapper.__name__ == "len" and builtin_wrapper([1, 2]) == 2


def test_post_import_hook_runs_after_the_package_is_imported(tmp_path, monkeypatch):
    package = tmp_path / "opbench_fake_framework"
    package.mkdir()
    (package / "__init__.py").write_text("from .sub import value\n")
    (package / "sub.py").write_text("value = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []

    def on_loaded(name):
        module = sys.modules[name]
        seen.append((name, module.value))      # its eager submodules are usable already

    hook = PostImportHook(("opbench_fake_framework",), on_loaded)
    meta_path_before = list(sys.meta_path)
    hook.install()
    try:
        module = importlib.import_module("opbench_fake_framework")
        importlib.import_module("opbench_fake_framework.sub")   # submodules: no second call
    finally:
        hook.uninstall()
        sys.modules.pop("opbench_fake_framework", None)
        sys.modules.pop("opbench_fake_framework.sub", None)
    assert seen == [("opbench_fake_framework", 42)]
    assert module.value == 42
    assert sys.meta_path == meta_path_before


def test_post_import_hook_ignores_other_and_missing_modules():
    calls = []
    hook = PostImportHook(("opbench_no_such_package",), calls.append)
    hook.install()
    try:
        importlib.import_module("json")
        try:
            importlib.import_module("opbench_no_such_package")
        except ImportError:
            pass
    finally:
        hook.uninstall()
    assert calls == [] and hook not in sys.meta_path
