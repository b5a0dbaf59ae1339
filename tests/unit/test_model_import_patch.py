"""The capture's wrappers' shared install and uninstall (capture/import_patch.py): a wrapper
is installed when its module is imported (at once if it already is), every attribute it
patched is restored on uninstall (in reverse order, a classmethod as the class's own
entry), and MindSpore's sync is the one given or PyNative's, looked up once."""
from __future__ import annotations

import sys
import types

from opbench.model.capture.import_patch import ImportPatch, MindSporeSync


class _Doubling(ImportPatch):
    module = "fakefw_for_import_patch"

    def _on_import(self, name: str) -> None:
        fw = sys.modules[self.module]
        if self.patched:
            return
        original = fw.scale
        self._patch(fw, "scale", lambda x: 2 * original(x))
        self._patch(fw, "scale", lambda x: 3 * x)


def test_installed_at_once_when_imported_and_restored_in_reverse_on_uninstall(monkeypatch):
    fw = types.ModuleType(_Doubling.module)
    fw.scale = lambda x: x
    original = fw.scale
    monkeypatch.setitem(sys.modules, _Doubling.module, fw)
    patch = _Doubling(capture=None)
    assert not patch.patched
    patch.install()
    assert patch.patched and fw.scale(2) == 6          # the last patch is what is read
    patch.install()                                     # a second import changes nothing
    assert fw.scale(2) == 6
    patch.uninstall()
    assert fw.scale is original and not patch.patched


def test_a_classmethod_is_restored_as_the_class_s_own_entry():
    class Function:
        @classmethod
        def apply(cls):
            return "own"
    own = vars(Function)["apply"]

    class Patch(ImportPatch):
        module = "unused_module_for_import_patch"

        def _on_import(self, name: str) -> None:
            pass
    patch = Patch(capture=None)
    patch._patch(Function, "apply", classmethod(lambda cls: "wrapped"), own)
    assert Function.apply() == "wrapped"
    patch.uninstall()
    assert vars(Function)["apply"] is own and Function.apply() == "own"


def test_mindspore_s_sync_is_the_one_given():
    seen = []
    sync = MindSporeSync(lambda: seen.append(True))
    sync()
    sync()
    assert seen == [True, True]
