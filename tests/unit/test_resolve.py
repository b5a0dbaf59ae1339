"""resolve_api: dotted paths, Tensor methods, and error messages. Framework-free: the
"frameworks" here are stdlib modules, fake modules in sys.modules, and a temporary package."""
from __future__ import annotations

import sys
import types

import pytest

from opbench.frameworks.base import UnknownAPI
from opbench.frameworks.resolve import resolve_api, suggestion


class FakeTensor:
    def __init__(self, value: float):
        self.value = value

    def add(self, other: float, alpha: float = 1.0) -> "FakeTensor":
        return FakeTensor(self.value + alpha * other)

    def __add__(self, other: float) -> "FakeTensor":
        return FakeTensor(self.value + other)

    def __getitem__(self, key: int) -> float:
        return [self.value, -self.value][key]

    @property
    def T(self) -> "FakeTensor":  # noqa: N802 - mirrors torch.Tensor.T
        return FakeTensor(-self.value)


def resolve(api: str, top: str = "fakefw"):
    return resolve_api(api, top, lambda: FakeTensor)


@pytest.fixture
def fakefw(monkeypatch):
    """fakefw, fakefw.nn, fakefw.nn.functional as plain (non-package) modules."""
    top = types.ModuleType("fakefw")
    nn = types.ModuleType("fakefw.nn")
    functional = types.ModuleType("fakefw.nn.functional")

    def softmax(x, dim=-1):
        return ("softmax", x, dim)

    class Outer:
        @staticmethod
        def inner(x):
            return ("inner", x)

    class DType:
        pass

    # What a framework defines says so in __module__; the API guard checks it.
    softmax.__module__ = "fakefw.nn.functional"
    Outer.__module__ = DType.__module__ = Outer.inner.__module__ = "fakefw"

    def reshape(x, shape):
        return ("reshape", x, shape)

    reshape.__module__ = "fakefw"
    functional.softmax = softmax
    functional.log_softmax = softmax
    top.nn, nn.functional = nn, functional
    top.Outer = Outer
    top.reshape = reshape
    top.float32 = DType()
    for module in (top, nn, functional):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    return top


def test_dotted_path_resolves_through_modules_then_attributes(fakefw):
    softmax = resolve("fakefw.nn.functional.softmax")
    assert softmax(3, dim=1) == ("softmax", 3, 1)


def test_dotted_path_may_end_in_a_class_attribute(fakefw):
    assert resolve("fakefw.Outer.inner")(5) == ("inner", 5)
    assert resolve("fakefw.Outer") is fakefw.Outer


def test_real_submodules_are_imported_by_longest_prefix():
    # json.decoder is a submodule that `import json` already loads; xml.dom.minidom is one
    # that `import xml` does not, so it can only resolve by importing the longer prefix.
    import json.decoder
    assert resolve_api("json.decoder.JSONDecoder", "json", lambda: object) is (
        json.decoder.JSONDecoder)
    parse_string = resolve_api("xml.dom.minidom.parseString", "xml", lambda: object)
    assert parse_string("<a/>").documentElement.tagName == "a"


def test_unknown_attribute_names_owner_and_suggests(fakefw):
    with pytest.raises(UnknownAPI) as err:
        resolve("fakefw.reshap")
    assert str(err.value) == ("fakefw.reshap: module 'fakefw' has no attribute 'reshap' "
                              "(did you mean 'reshape'?)")


def test_unknown_attribute_deep_in_path_names_that_module(fakefw):
    with pytest.raises(UnknownAPI) as err:
        resolve("fakefw.nn.functional.sofmax")
    assert str(err.value).startswith("fakefw.nn.functional.sofmax: module "
                                     "'fakefw.nn.functional' has no attribute 'sofmax' "
                                     "(did you mean 'softmax'")


def test_unknown_attribute_of_class_says_class(fakefw):
    with pytest.raises(UnknownAPI, match=r"class 'fakefw.Outer' has no attribute 'iner' "
                                         r"\(did you mean 'inner'\?\)"):
        resolve("fakefw.Outer.iner")


def test_no_suggestion_when_nothing_is_close(fakefw):
    with pytest.raises(UnknownAPI) as err:
        resolve("fakefw.zzzzqqq")
    assert "did you mean" not in str(err.value)


def test_path_must_start_with_the_framework_module(fakefw):
    with pytest.raises(UnknownAPI, match=r"^torch.reshape: a fakefw API must start with "
                                         r"'fakefw.'"):
        resolve("torch.reshape")
    with pytest.raises(UnknownAPI, match="must start with"):
        resolve("fakefw")   # the bare module is not an API


@pytest.mark.parametrize("api", ["fakefw..reshape", "fakefw.reshape(1)",
                                 "fakefw.__import__('os').system('true')", "fakefw.1x"])
def test_text_that_is_not_a_dotted_name_is_rejected_not_evaluated(fakefw, api):
    with pytest.raises(UnknownAPI, match="not a dotted Python name"):
        resolve(api)


def test_non_callable_target_is_rejected(fakefw):
    with pytest.raises(UnknownAPI, match="fakefw.float32: resolves to a DType, which is "
                                         "not callable"):
        resolve("fakefw.float32")


def test_framework_not_installed():
    with pytest.raises(UnknownAPI, match="module 'no_such_framework_opbench' is not installed"):
        resolve_api("no_such_framework_opbench.ops.add", "no_such_framework_opbench",
                    lambda: object)


def test_broken_submodule_is_reported_as_broken_not_missing(tmp_path, monkeypatch):
    package = tmp_path / "brokenfw_opbench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sub.py").write_text("import missing_dependency_of_opbench_test\n"
                                    "def op():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UnknownAPI) as err:
        resolve_api("brokenfw_opbench.sub.op", "brokenfw_opbench", lambda: object)
    assert "a module on this path is installed but failed to import" in str(err.value)
    assert "missing_dependency_of_opbench_test" in str(err.value)
    sys.modules.pop("brokenfw_opbench", None)   # a test-only package: leave no trace


def test_tensor_method_calls_the_receivers_method_with_args_and_kwargs():
    add = resolve("Tensor.add")
    assert add(FakeTensor(1.0), 2.0, alpha=3.0).value == 7.0
    assert add.__qualname__ == "Tensor.add"


def test_tensor_operators_resolve_as_methods():
    assert resolve("Tensor.__add__")(FakeTensor(1.0), 2.0).value == 3.0
    assert resolve("Tensor.__getitem__")(FakeTensor(4.0), 1) == -4.0


def test_tensor_property_is_read_not_called():
    assert resolve("Tensor.T")(FakeTensor(2.0)).value == -2.0


def test_tensor_method_is_looked_up_on_the_receiver_at_call_time():
    class Special(FakeTensor):
        def add(self, other, alpha=1.0):
            return "overridden"

    assert resolve("Tensor.add")(Special(1.0), 1.0) == "overridden"


def test_unknown_tensor_method_suggests():
    with pytest.raises(UnknownAPI) as err:
        resolve("Tensor.ad")
    message = str(err.value)
    assert message.startswith(f"Tensor.ad: class '{__name__}.FakeTensor' has no attribute 'ad'")
    assert "'add'" in message


def test_tensor_method_name_must_be_an_identifier():
    with pytest.raises(UnknownAPI, match="is not a method name"):
        resolve("Tensor.sum()")


def test_suggestion_lists_up_to_three_names():
    assert suggestion("reshap", ["reshape", "other"]) == " (did you mean 'reshape'?)"
    assert suggestion("__ad__", ["__add__", "__and__", "__radd__", "zzz"]).count("'") == 6
    assert " or " in suggestion("__ad__", ["__add__", "__and__", "__radd__"])
    assert suggestion("abc", []) == ""


# -- the API guard: a case file cannot walk out of its framework (issue #15) ---------------

@pytest.fixture
def leaky_fakefw(fakefw, monkeypatch):
    """A framework that, like torch and numpy, holds references to modules and objects
    that are not its own."""
    import builtins
    import json
    import os

    monkeypatch.setattr(fakefw, "os", os, raising=False)
    monkeypatch.setattr(fakefw, "builtins", builtins, raising=False)
    monkeypatch.setattr(fakefw, "Decoder", json.JSONDecoder, raising=False)
    monkeypatch.setattr(fakefw.Outer, "os", os, raising=False)
    monkeypatch.setattr(fakefw.nn, "print", print, raising=False)
    return fakefw


@pytest.mark.parametrize("api, why", [
    ("fakefw.os.system", "runs code"),                           # refused by its name first
    ("fakefw.os.getcwd", "not part of fakefw"),                  # a module from outside
    ("fakefw.builtins.getattr", "not part of fakefw"),
    ("fakefw.Decoder", "not part of fakefw"),                    # a class from outside
    ("fakefw.nn.print", "not part of fakefw"),                   # a builtin
    ("fakefw.Outer.os.getcwd", "not part of fakefw"),            # through a class to os
    ("fakefw.reshape.__globals__", "special attribute"),
    ("fakefw.Outer.__subclasses__", "special attribute"),
    ("fakefw.Outer.__class__", "special attribute"),
    ("fakefw.Outer.__init__.__globals__", "special attribute"),
    ("fakefw.nn.functional.softmax.__builtins__", "special attribute"),
])
def test_a_path_may_not_leave_its_framework(leaky_fakefw, api, why):
    with pytest.raises(UnknownAPI, match=why):
        resolve(api)


@pytest.mark.parametrize("api", ["fakefw.load", "fakefw.nn.save", "fakefw.utils.tofile",
                                 "fakefw.ops.load_library", "fakefw.ops.Custom"])
def test_file_and_code_loading_names_are_refused_before_any_import(api, monkeypatch):
    monkeypatch.setattr("importlib.import_module", lambda name: pytest.fail("imported"))
    with pytest.raises(UnknownAPI, match="reads or writes files or runs code"):
        resolve(api)


@pytest.mark.parametrize("api", ["torch.utils.cpp_extension.load_inline", "torch.hub.load",
                                 "numpy.distutils.exec_command.exec_command",
                                 "mindspore.train.serialization.load_checkpoint"])
def test_code_running_namespaces_are_refused_before_any_import(api, monkeypatch):
    monkeypatch.setattr("importlib.import_module", lambda name: pytest.fail("imported"))
    with pytest.raises(UnknownAPI, match="reads or writes files or runs code"):
        resolve_api(api, api.split(".")[0], lambda: object)


def test_operator_dunders_still_end_a_class_path(fakefw):
    class Tensorish:
        def __add__(self, other):
            return "added"

    Tensorish.__module__ = Tensorish.__add__.__module__ = "fakefw"
    fakefw.Tensor = Tensorish
    assert resolve("fakefw.Tensor.__add__")(Tensorish(), 1) == "added"


@pytest.mark.parametrize("api", ["Tensor.__class__", "Tensor.__reduce_ex__",
                                 "Tensor.__init_subclass__", "Tensor._private",
                                 "Tensor.tofile"])
def test_tensor_paths_name_public_methods_or_operators_only(api):
    with pytest.raises(UnknownAPI):
        resolve(api)


def test_real_stdlib_escape_through_a_real_package_is_refused():
    # json.decoder holds `re`; json.decoder.re.compile belongs to re, not json
    with pytest.raises(UnknownAPI, match="'json.decoder.re' is module 're', which is not part "
                                         "of json"):
        resolve_api("json.decoder.re.compile", "json", lambda: object)
