"""The capture observer (opbench/model/capture/observer.py) fed by hand, as the tracer feeds it, with
a FAKE `torch` module in sys.modules (a Tensor class, an nn.Parameter subclass, a dtype
class; never the real torch): where each tensor argument came from, which tensors are
externals and what they record, tensors forgotten when the script drops them, layers
lowered to functions (opbench/model/capture/lowering.py), what makes a call unreplayable, the call
cap, markers and the tracer's durations."""
from __future__ import annotations

import gc
import sys
import types

import numpy as np
import pytest

from opbench.model import markers
from opbench.model.capture.observer import Capture
from opbench.model.program import Dtype, Ext, Lit, Marker, Opaque, Ref, Seq, SliceOf
from opbench.trace.events import (FUNCTION, MODULE, PRIMITIVE, SCOPE, TENSOR_METHOD,
                                  CallEvent, CallSite)

F = "torch.nn.functional."


class FakeDtype:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


FLOAT32, INT64, FLOAT16 = FakeDtype("float32"), FakeDtype("int64"), FakeDtype("float16")


class _Scalar:
    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value


class FakeTensor:
    """What the capture reads of a tensor: shape, dtype, numel, min/max(), stride(), detach()
    and a basic index (a float range's sample). Weakly
    referenceable, as torch tensors are."""

    def __init__(self, shape, dtype=FLOAT32, values=None, strides=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.values = np.zeros(self.shape) if values is None else np.asarray(values)
        self.strides = strides

    def stride(self):
        if self.strides is not None:
            return self.strides
        out, size = [], 1                          # contiguous
        for dim in reversed(self.shape):
            out.insert(0, size)
            size *= dim
        return tuple(out)

    def numel(self) -> int:
        return int(np.prod(self.shape))

    def min(self):
        return _Scalar(self.values.min())

    def max(self):
        return _Scalar(self.values.max())

    def detach(self):
        return self

    def __getitem__(self, index):
        # the range's sample (capture/float_range.py): a view of the values it keeps
        part = self.values[index]
        return FakeTensor(part.shape, self.dtype, values=part)


class FakeParameter(FakeTensor):
    pass


class FakeSize(tuple):
    pass


class FakeDevice:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return self.name


@pytest.fixture
def torch(monkeypatch):
    fake = types.ModuleType("torch")
    fake.Tensor = FakeTensor
    fake.nn = types.SimpleNamespace(Parameter=FakeParameter)
    fake.dtype = FakeDtype
    fake.Size = FakeSize
    fake.device = FakeDevice
    fake.float16 = FLOAT16
    fake.grad_enabled = True                 # what torch.no_grad() switches off
    fake.is_grad_enabled = lambda: fake.grad_enabled
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.delitem(sys.modules, "mindspore", raising=False)
    return fake


class Feeder:
    """Feeds calls to a Capture with increasing tracer event indexes."""

    def __init__(self, capture: Capture):
        self.capture = capture
        self.index = 0

    def function(self, api: str, args=(), kwargs=None, result=None, kind=FUNCTION):
        self.capture.on_call(self.index, CallSite("torch", api, kind), tuple(args),
                             dict(kwargs or {}), result)
        self.index += 1
        return result

    def layer(self, api: str, layer, args=(), kwargs=None, result=None):
        self.capture.on_call(self.index, CallSite("torch", api, MODULE, skip=1),
                             (layer, *args), dict(kwargs or {}), result)
        self.index += 1
        return result

    def calls(self):
        return self.capture.calls([])


def _hidden(*shape):
    return FakeTensor(shape or (4, 8))


# -- data flow ---------------------------------------------------------------------------------

def test_produced_tensors_become_refs_and_the_rest_externals(torch):
    feed = Feeder(Capture())
    x, w = FakeTensor((4, 16)), FakeParameter((8, 16))
    y = feed.function("torch.matmul", (x, w), result=_hidden())
    z = feed.function("torch.relu", (y,), result=_hidden())
    feed.function("torch.Tensor.add", (z, y), {"alpha": 2.0}, result=_hidden(),
                  kind=TENSOR_METHOD)
    calls = feed.calls()
    assert calls[0].args == (Ext(0), Ext(1))
    assert calls[1].args == (Ref(0),)
    assert calls[2].args == (Ref(1), Ref(0)) and calls[2].kwargs == (("alpha", Lit(2.0)),)
    assert calls[0].outputs == ("tensor", (4, 8), "float32", 0.0, 0.0)    # zeros
    inp, weight = feed.capture.externals()
    assert (inp.shape, inp.dtype, inp.role) == ((4, 16), "float32", "input")
    assert (weight.shape, weight.role) == ((8, 16), "parameter")
    assert all(c.replayable for c in calls)


def test_an_external_used_twice_is_described_once(torch):
    feed = Feeder(Capture())
    x = FakeTensor((4, 8))
    feed.function("torch.relu", (x,), result=_hidden())
    feed.function("torch.sigmoid", (x,), result=_hidden())
    assert [c.args for c in feed.calls()] == [(Ext(0),), (Ext(0),)]
    assert len(feed.capture.externals()) == 1


def test_tuple_results_are_followed_with_paths(torch):
    feed = Feeder(Capture())
    a, b, c = _hidden(2, 8), _hidden(2, 8), _hidden(1)
    feed.function("torch.weird", (FakeTensor((4, 8)),), result=((a, b), c))
    feed.function("torch.add", (b, c), result=_hidden(2, 8))
    calls = feed.calls()
    assert calls[0].outputs == ("seq", (("seq", (("tensor", (2, 8), "float32", 0.0, 0.0),) * 2),
                                        ("tensor", (1,), "float32", 0.0, 0.0)))
    assert calls[1].args == (Ref(0, (0, 1)), Ref(0, (1,)))


def test_parameters_stay_externals_when_an_initialiser_returns_them(torch):
    feed = Feeder(Capture())
    w = FakeParameter((8, 16))
    feed.function("torch.nn.init.normal_", (w,), result=w)
    feed.function("torch.matmul", (FakeTensor((4, 16)), w), result=_hidden())
    calls = feed.calls()
    assert calls[0].args == (Ext(0),)
    assert calls[1].args == (Ext(1), Ext(0))      # the weight, not the init call's output


def test_an_in_place_op_on_a_plain_tensor_makes_it_that_calls_output(torch):
    feed = Feeder(Capture())
    x = FakeTensor((4, 8))
    feed.function("torch.Tensor.mul_", (x, 2.0), result=x, kind=TENSOR_METHOD)
    feed.function("torch.relu", (x,), result=_hidden())
    assert feed.calls()[1].args == (Ref(0),)


def test_integer_externals_and_outputs_keep_their_observed_range(torch):
    feed = Feeder(Capture())
    ids = FakeTensor((2, 5), INT64, values=[[2, 4, 9, 3, 3], [5, 6, 7, 8, 2]])
    labels = FakeTensor((3,), INT64, values=[0, 1, 4])
    feed.function(F + "embedding", (ids, FakeParameter((10, 8))), result=_hidden(2, 5, 8))
    feed.function("torch.argmax", (FakeTensor((3, 5)),), result=labels)
    (ext_ids, _, _) = feed.capture.externals()
    assert (ext_ids.dtype, ext_ids.low, ext_ids.high) == ("int64", 2.0, 9.0)
    assert feed.calls()[1].outputs == ("tensor", (3,), "int64", 0.0, 4.0)
    weight = feed.capture.externals()[1]
    assert (weight.low, weight.high) == (0.0, 0.0)       # a float weight: its range too


def test_float_externals_and_outputs_keep_their_observed_range(torch):
    """A BCE's target made by torch.rand in [0, 1] (vae_mlp_bce_adam.py): its range goes to
    the external and to the output a step made before it reads."""
    feed = Feeder(Capture())
    target = FakeTensor((2, 3), values=[[0.25, 0.5, 0.0], [1.0, 0.75, 0.5]])
    made = feed.function("torch.rand", (2, 3), result=FakeTensor(
        (2, 3), values=[[0.1, 0.9, 0.5], [0.2, 0.3, 0.4]]))
    feed.function(F + "binary_cross_entropy", (made, target), result=_hidden(1))
    assert feed.calls()[0].outputs == ("tensor", (2, 3), "float32", 0.1, 0.9)
    ext = feed.capture.externals()[0]
    assert (ext.low, ext.high) == (0.0, 1.0)


def test_an_infinite_bound_is_unset_and_a_nan_leaves_no_range(torch):
    feed = Feeder(Capture())
    mask = FakeTensor((2, 2), values=[[0.0, -np.inf], [0.0, 0.0]])
    broken = FakeTensor((2, 2), values=[[0.0, np.nan], [1.0, 2.0]])
    feed.function("torch.add", (mask, broken), result=_hidden(2, 2))
    first, second = feed.capture.externals()
    assert (first.low, first.high) == (None, 0.0)
    assert (second.low, second.high) == (None, None)


def test_an_empty_integer_tensor_has_no_range(torch):
    feed = Feeder(Capture())
    feed.function("torch.relu", (FakeTensor((0,), INT64, values=np.zeros(0)),),
                  result=_hidden())
    ext = feed.capture.externals()[0]
    assert ext.low is None and ext.high is None


def test_a_dropped_tensors_id_is_forgotten(torch):
    """Ids are reused once an object is freed: a new tensor at a dropped one's address
    must not be taken for that tensor (an external's shape or another call's output)."""
    capture = Capture()
    feed = Feeder(capture)
    x = FakeTensor((4, 16))
    y = feed.function("torch.relu", (x,), result=_hidden(4, 16))
    x_key, y_key = id(x), id(y)
    del x, y
    gc.collect()
    assert x_key not in capture._external_of and y_key not in capture._produced
    fresh = FakeTensor((2, 3))
    feed.function("torch.sigmoid", (fresh,), result=_hidden(2, 3))
    assert feed.calls()[1].args == (Ext(1),)
    assert capture.externals()[1].shape == (2, 3)


# -- arguments ---------------------------------------------------------------------------------

def test_literals_dtypes_slices_sizes_and_sequences_are_described(torch):
    feed = Feeder(Capture())
    x = FakeTensor((4, 8))
    feed.function("torch.Tensor.__getitem__", (x, (slice(None, 2), Ellipsis, None)),
                  result=_hidden(2, 8), kind=TENSOR_METHOD)
    feed.function("torch.Tensor.to", (x, torch.float16), result=_hidden(),
                  kind=TENSOR_METHOD)
    feed.function("torch.Tensor.view", (x, FakeSize((2, 16))), result=_hidden(2, 16),
                  kind=TENSOR_METHOD)
    feed.function("torch.cat", ([x, x],), {"dim": -1}, result=_hidden(4, 16))
    calls = feed.calls()
    assert calls[0].args[1] == Seq("tuple", (SliceOf(None, 2, None), Opaque("ellipsis", "..."),
                                             Lit(None)))
    assert calls[0].replayable                  # an ellipsis is rebuilt by the replay
    assert calls[1].args[1] == Dtype("float16")
    assert calls[2].args[1] == Seq("tuple", (Lit(2), Lit(16)))
    assert calls[3].args == (Seq("list", (Ext(0), Ext(0))),)
    assert calls[3].kwargs == (("dim", Lit(-1)),)


@pytest.mark.parametrize("argument,type_name", [
    (object(), "object"),
    (slice(FakeTensor((1,)), None), "slice"),
    (list(range(65)), "list"),
])
def test_an_opaque_argument_makes_the_call_unreplayable(torch, argument, type_name):
    feed = Feeder(Capture())
    feed.function("torch.something", (FakeTensor((4,)), argument), result=_hidden())
    call = feed.calls()[0]
    assert not call.replayable and call.replay_api is None
    assert call.problem == f"an argument a replay cannot rebuild ({type_name})"


def test_an_opaque_keyword_makes_the_call_unreplayable(torch):
    feed = Feeder(Capture())
    feed.function("torch.zeros", (3,), {"layout": object()}, result=_hidden(3))
    assert feed.calls()[0].problem == "an argument a replay cannot rebuild (object)"


def test_a_device_argument_is_its_name(torch):
    feed = Feeder(Capture())
    feed.function("torch.zeros", (3,), {"device": torch.device("cpu")}, result=_hidden(3))
    call = feed.calls()[0]
    assert call.kwargs == (("device", Lit("cpu")),) and call.replayable


def test_calls_made_with_grad_mode_off_are_flagged(torch):
    """An optimizer's update runs under torch.no_grad(): its replay must too."""
    feed = Feeder(Capture())
    w = FakeParameter((8,))
    feed.function("torch.mul", (w, 2.0), result=_hidden(8))
    torch.grad_enabled = False
    feed.function("torch.Tensor.add_", (w, FakeTensor((8,))), result=w, kind=TENSOR_METHOD)
    torch.grad_enabled = True
    forward, update = feed.calls()
    assert forward.grad_enabled and not update.grad_enabled


def test_backward_calls_are_flagged(torch):
    feed = Feeder(Capture())
    loss = feed.function("torch.sum", (FakeTensor((4,)),), result=_hidden(1))
    feed.function("torch.Tensor.backward", (loss,), kind=TENSOR_METHOD)
    calls = feed.calls()
    assert calls[1].backward and not calls[0].backward
    assert calls[1].outputs == ("none",)


class FakePrimitive:
    def __init__(self, **init_attrs):
        self.init_attrs = init_attrs


def test_a_primitive_replays_from_its_constructor_arguments_and_scopes_are_not_calls(torch):
    capture = Capture()
    capture.on_call(0, CallSite("torch", "my.Model", SCOPE, skip=1), (object(),), {}, None)
    primitive = FakePrimitive(kernel_size=(2, 2), strides=2, pad_mode="VALID")
    capture.on_call(1, CallSite("mindspore", "mindspore.ops.MaxPool", PRIMITIVE, skip=1),
                    (primitive, FakeTensor((1, 4, 8, 8))), {}, _hidden(1, 4, 4, 4))
    (call,) = capture.calls([])
    assert call.api == call.replay_api == "mindspore.ops.MaxPool" and call.args == (Ext(0),)
    assert call.replayable
    assert call.init == (("kernel_size", (2, 2)), ("pad_mode", "VALID"), ("strides", 2))


@pytest.mark.parametrize("primitive, why", [
    (object(), "keeps no constructor arguments"),
    (FakePrimitive(axis=2, fn=len), "constructor argument 'fn'"),
])
def test_a_primitive_whose_constructor_cannot_be_rebuilt_is_unreplayable(torch, primitive,
                                                                         why):
    capture = Capture()
    capture.on_call(0, CallSite("mindspore", "mindspore.ops.Add", PRIMITIVE, skip=1),
                    (primitive, FakeTensor((2,)), FakeTensor((2,))), {}, _hidden(2))
    (call,) = capture.calls([])
    assert call.args == (Ext(0), Ext(1)) and not call.replayable and why in call.problem


# -- layers lowered ------------------------------------------------------------------------------

def _ns(**attributes):
    return types.SimpleNamespace(**attributes)


def test_a_linear_layer_is_its_function_with_its_parameters_as_externals(torch):
    feed = Feeder(Capture())
    w, b = FakeParameter((8, 16)), FakeParameter((8,))
    feed.layer("torch.nn.Linear", _ns(weight=w, bias=b), (FakeTensor((4, 16)),),
               result=_hidden())
    feed.layer("torch.nn.Linear", _ns(weight=w, bias=None), (), {"input": FakeTensor((4, 16))},
               result=_hidden())
    first, second = feed.calls()
    assert first.api == "torch.nn.Linear" and first.kind == MODULE
    assert first.replay_api == F + "linear" and first.args == (Ext(0), Ext(1), Ext(2))
    assert second.args == (Ext(3), Ext(1), Lit(None))       # the same weight, no bias
    roles = [e.role for e in feed.capture.externals()]
    assert roles == ["input", "parameter", "parameter", "input"]


def test_layer_norm_and_embedding_layers(torch):
    feed = Feeder(Capture())
    norm = _ns(normalized_shape=(8,), weight=FakeParameter((8,)), bias=FakeParameter((8,)),
               eps=1e-6)
    table = FakeParameter((100, 8))
    ids = FakeTensor((4,), INT64, values=[1, 5, 99, 0])
    x = feed.layer("torch.nn.Embedding", _ns(weight=table, max_norm=None, padding_idx=0),
                   (ids,), result=_hidden(4, 8))
    feed.layer("torch.nn.LayerNorm", norm, (x,), result=_hidden(4, 8))
    emb, ln = feed.calls()
    assert emb.replay_api == F + "embedding" and emb.args == (Ext(0), Ext(1))
    assert emb.kwargs == (("padding_idx", Lit(0)),)
    assert ln.replay_api == F + "layer_norm"
    assert ln.args == (Ref(0), Seq("list", (Lit(8),)), Ext(2), Ext(3), Lit(1e-6))


def test_an_eval_dropout_is_an_alias_and_later_uses_read_its_input(torch):
    feed = Feeder(Capture())
    dropout = _ns(training=False, p=0.1)
    h = feed.function("torch.relu", (FakeTensor((4, 8)),), result=_hidden())
    same = feed.layer("torch.nn.Dropout", dropout, (h,), result=h)          # returns x
    copy = feed.layer("torch.nn.Dropout", dropout, (same,), result=_hidden())  # a new object
    feed.function("torch.add", (same, copy), result=_hidden())
    calls = feed.calls()
    assert calls[1].alias_of == Ref(0) and calls[1].replay_api is None and calls[1].replayable
    assert calls[2].alias_of == Ref(0)
    assert calls[3].args == (Ref(0), Ref(0))


def test_an_alias_of_an_external_makes_its_output_that_external(torch):
    feed = Feeder(Capture())
    x = FakeTensor((4, 8))
    out = feed.layer("torch.nn.Identity", _ns(), (x,), result=_hidden())
    feed.function("torch.relu", (out,), result=_hidden())
    calls = feed.calls()
    assert calls[0].alias_of == Ext(0) and calls[1].args == (Ext(0),)


def test_an_identity_on_a_tuple_of_tensors_is_an_alias_of_each_element(torch):
    """MindSpore's grad reducer (nn.TrainOneStepCell) is an Identity on the gradients' TUPLE:
    it was "an alias of a non-tensor", 12-69% of ms_train_one_step_cell.py's region. Each
    element of the result now reads as the input it passed through."""
    feed = Feeder(Capture())
    made = feed.function("torch.relu", (FakeTensor((4, 8)),), result=_hidden())
    weight_grad = FakeTensor((8, 8))
    passed = (made, weight_grad)
    out = feed.layer("mindspore.mint.nn.Identity", _ns(), (passed,), result=passed)
    feed.function("torch.add", (out[0], out[1]), result=_hidden())
    feed.function("torch.relu", (list(out)[1],), result=_hidden())
    calls = feed.calls()
    alias = Seq("tuple", (Ref(0), Ext(1)))
    assert calls[1].alias_of == alias and calls[1].replayable and calls[1].problem is None
    assert calls[2].args == (Ref(0), Ext(1)) and calls[3].args == (Ext(1),)


def test_an_identity_on_a_new_tuple_notes_each_element_as_its_input(torch):
    """An Identity whose result is a new tuple of new tensor objects (a copy) still reads,
    element by element, as the inputs it stands for."""
    feed = Feeder(Capture())
    a, b = FakeTensor((2,)), FakeTensor((3,))
    out = feed.layer("mindspore.nn.Identity", _ns(), ([a, b],), result=(_hidden(2), _hidden(3)))
    feed.function("torch.neg", (out[1],), result=_hidden(3))
    calls = feed.calls()
    assert calls[0].alias_of == Seq("list", (Ext(0), Ext(1))) and calls[1].args == (Ext(1),)


@pytest.mark.parametrize("passed", [(), (1, 2), ("not", "tensors")])
def test_an_identity_on_no_tensors_is_still_refused(torch, passed):
    feed = Feeder(Capture())
    feed.layer("mindspore.nn.Identity", _ns(), (passed,), result=passed)
    (call,) = feed.calls()
    assert call.alias_of is None and not call.replayable
    assert call.problem == "an alias of a non-tensor"


@pytest.mark.parametrize("api, kind", [("mindspore.ops.Depend", PRIMITIVE),
                                       ("mindspore.ops.depend", FUNCTION)])
def test_ops_depend_is_an_alias_of_its_value(torch, api, kind):
    """ops.Depend(value, expr) returns value (an ordering hint): TrainOneStepCell's
    `ops.depend(loss, self.optimizer(grads))` was "no entry in the API mapping". Its output
    reads as the value; the expression (the optimizer's flags) is not an input of it."""
    capture = Capture()
    loss = _hidden()
    capture.on_call(0, CallSite("mindspore", "mindspore.ops.sum", FUNCTION),
                    (FakeTensor((4,)),), {}, loss)
    skip, head = (1, (FakePrimitive(),)) if kind == PRIMITIVE else (0, ())
    depended = _hidden()
    capture.on_call(1, CallSite("mindspore", api, kind, skip=skip),
                    (*head, loss, (True, True)), {}, depended)
    capture.on_call(2, CallSite("mindspore", "mindspore.Tensor.asnumpy", TENSOR_METHOD),
                    (depended,), {}, None)
    _, depend, read = capture.calls([])
    assert depend.alias_of == Ref(0) and depend.replay_api is None and depend.replayable
    assert read.args == (Ref(0),)


def test_a_training_dropout_is_a_dropout_call(torch):
    feed = Feeder(Capture())
    feed.layer("torch.nn.Dropout", _ns(training=True, p=0.1), (FakeTensor((4, 8)),),
               result=_hidden())
    call = feed.calls()[0]
    assert call.replay_api == F + "dropout" and call.args == (Ext(0), Lit(0.1), Lit(True))


def test_loss_layers_pass_only_the_settings_that_differ_from_the_defaults(torch):
    feed = Feeder(Capture())
    logits, labels = FakeTensor((4, 10)), FakeTensor((4,), INT64, values=[0, 9, 3, 3])
    plain = _ns(weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0)
    tuned = _ns(weight=FakeParameter((10,)), ignore_index=0, reduction="sum",
                label_smoothing=0.1)
    feed.layer("torch.nn.CrossEntropyLoss", plain, (logits, labels), result=_hidden())
    feed.layer("torch.nn.CrossEntropyLoss", tuned, (logits,), {"target": labels},
               result=_hidden())
    feed.layer("torch.nn.MSELoss", _ns(reduction="none"), (logits, logits), result=_hidden())
    first, second, mse = feed.calls()
    assert first.replay_api == F + "cross_entropy"
    assert first.args == (Ext(0), Ext(1)) and first.kwargs == ()
    assert second.args == (Ext(0), Ext(1))
    assert second.kwargs == (("weight", Ext(2)), ("ignore_index", Lit(0)),
                             ("reduction", Lit("sum")), ("label_smoothing", Lit(0.1)))
    assert mse.replay_api == F + "mse_loss" and mse.kwargs == (("reduction", Lit("none")),)


def test_a_layer_without_a_function_form_is_a_problem(torch):
    feed = Feeder(Capture())
    feed.layer("torch.nn.Bilinear", _ns(), (FakeTensor((4, 8)), FakeTensor((4, 8))),
               result=_hidden())
    feed.layer("torch.nn.Embedding", _ns(weight=FakeParameter((9, 2)), max_norm=1.0,
                                         padding_idx=None), (FakeTensor((3,), INT64),),
               result=_hidden(3, 2))
    feed.layer("torch.nn.Linear", _ns(weight=FakeParameter((8, 8))), (FakeTensor((4, 8)),),
               result=_hidden())
    bilinear, embedding, broken = feed.calls()
    assert bilinear.problem == "no function form for the layer torch.nn.Bilinear here"
    assert bilinear.args == (Ext(0), Ext(1)) and not bilinear.replayable
    assert "max_norm" in embedding.problem and not embedding.replayable
    assert broken.problem.startswith("torch.nn.Linear could not be lowered: AttributeError")


# -- the program -------------------------------------------------------------------------------

def test_the_call_cap_keeps_the_first_calls_and_counts_the_rest(torch):
    capture = Capture(max_calls=2)
    feed = Feeder(capture)
    for _ in range(5):
        feed.function("torch.relu", (FakeTensor((2,)),), result=_hidden(2))
    assert len(feed.calls()) == 2
    assert capture.dropped == 3


def _event(index: int, start_ns: int, duration_ns: int) -> CallEvent:
    return CallEvent(index=index, framework="torch", api="torch.relu", kind=FUNCTION,
                     thread_id=1, start_ns=start_ns, duration_ns=duration_ns, depth=0,
                     parent=None, signature=0)


def test_calls_take_their_durations_from_the_tracers_events_by_index(torch):
    capture = Capture()
    for index in (10, 11, 12):
        capture.on_call(index, CallSite("torch", "torch.relu", FUNCTION),
                        (FakeTensor((2,)),), {}, _hidden(2))
    calls = capture.calls([_event(12, 900, 30), _event(10, 100, 50)])
    assert [(c.index, c.start_ns, c.duration_ns) for c in calls] == [(0, 100, 50), (1, 0, 0),
                                                                     (2, 900, 30)]


def test_markers_mark_the_position_of_the_next_call(torch):
    capture = Capture()
    feed = Feeder(capture)
    markers.activate(capture)
    try:
        markers.step("first")
        feed.function("torch.relu", (FakeTensor((2,)),), result=_hidden(2))
        feed.function("torch.relu", (FakeTensor((2,)),), result=_hidden(2))
        markers.step()
    finally:
        markers.deactivate()
    markers.step("outside opbench model: nothing")
    assert capture.markers == [Marker(0, "first"), Marker(2, "")]


# -- a MindSpore backward (value_and_grad's grad function: ms_backward.py) -----------------------

def test_a_backward_is_a_call_on_the_loss_and_weights_whose_grads_feed_the_optimizer(torch):
    capture = Capture()
    feed = Feeder(capture)
    w1, w2 = FakeParameter((8, 16)), FakeParameter((8,))
    x = FakeTensor((4, 16))
    first = capture.next_position()
    h = feed.function("torch.matmul", (x, w1), result=_hidden())
    loss = feed.function("torch.sum", (h,), result=_hidden(1))
    returned_loss, grads = FakeTensor(()), (FakeTensor((8, 16)), FakeTensor((8,)))
    capture.backward(loss, [w1, w2], None, (returned_loss, grads), first, elapsed_ns=1000)
    feed.function("torch.optim_step", ([w1, w2], grads), result=None)
    calls = capture.calls([_event(0, 100, 200), _event(1, 300, 50), _event(2, 2000, 10)])
    backward = calls[2]
    assert backward.backward and backward.api == "mindspore.value_and_grad"
    assert backward.replayable and backward.framework == "mindspore"
    assert backward.args == (Ref(1), Seq("list", (Ext(1), Ext(2))))
    # the grad function took 1000 ns, of which its forward's two calls 250: they ran first
    assert (backward.start_ns, backward.duration_ns) == (350, 750)
    assert calls[3].args == (Seq("list", (Ext(1), Ext(2))),
                             Seq("tuple", (Ref(2, (1, 0)), Ref(2, (1, 1)))))


def test_has_aux_and_grad_position_keep_the_aux_values_and_every_weight_gradient(torch):
    """value_and_grad(fn, 0, weights, has_aux=True) returns ((loss, logits), (input's
    gradient, (weights' gradients))): the weights' gradients sat three levels down, where no
    path of the captured call reached, so the update read them as unseen tensors. The call's
    output is kept as (out, weights' gradients, inputs' gradients), and the forward's output
    is recorded as the calls that made it."""
    from opbench.model.capture.observer import backward_result
    capture = Capture()
    feed = Feeder(capture)
    w1, w2 = FakeParameter((8, 16)), FakeParameter((8,))
    x = FakeTensor((4, 16))
    first = capture.next_position()
    logits = feed.function("torch.matmul", (x, w1), result=_hidden())
    loss = feed.function("torch.sum", (logits,), result=_hidden(1))
    grads = (FakeTensor((8, 16)), FakeTensor((8,)))
    x_grad = FakeTensor((4, 16))
    capture.backward(loss, [w1, w2], 0, ((loss, logits), (x_grad, grads)), first, 1000)
    feed.function("torch.optim_step", ([w1, w2], grads), result=None)
    feed.function("torch.argmax", (logits,), result=_hidden(1))
    calls = capture.calls([_event(0, 100, 200), _event(1, 300, 50), _event(2, 2000, 10),
                           _event(3, 2100, 10)])
    backward = calls[2]
    assert dict(backward.kwargs) == {"forward_out": Seq("tuple", (Ref(1), Ref(0)))}
    assert [node[0] for node in backward.outputs[1]] == ["seq", "seq", "tensor"]
    assert calls[3].args[1] == Seq("tuple", (Ref(2, (1, 0)), Ref(2, (1, 1))))
    assert calls[4].args == (Ref(2, (0, 1)),)            # the logits, as the aux value
    # without a grad_position or weights the result is kept as it was returned
    assert backward_result(("l", ("g",)), None, True) == ("l", ("l", ("g",)))
    assert backward_result("l", None, True) == ("l", "l")


def test_a_compiled_function_is_one_unreplayable_call_whose_result_later_calls_read(torch):
    """ms_jit.py: a @jit step's result read by loss.asnumpy() is that call's output."""
    capture = Capture()
    feed = Feeder(capture)
    x = FakeTensor((4, 16))
    loss = FakeTensor(())
    capture.compiled("mindspore.jit", (x,), {}, loss, "a compiled function: why", 0, 5000)
    feed.function("torch.Tensor.item", (loss,), result=1.5)
    jit, item = capture.calls([_event(1, 6000, 10)])
    assert jit.api == "mindspore.jit" and not jit.replayable and jit.problem.endswith("why")
    assert jit.args == (Ext(0),) and jit.duration_ns == 5000
    assert item.args == (Ref(0),)


def test_a_backward_without_a_captured_loss_or_without_weights_says_why(torch):
    capture = Capture()
    w = FakeParameter((8,))
    capture.backward(FakeTensor(()), [w], None, (FakeTensor(()), (FakeTensor((8,)),)), 0, 10)
    loss = Feeder(capture).function("torch.sum", (w,), result=_hidden(1))
    capture.backward(loss, None, 0, (FakeTensor(()), (FakeTensor((8,)),)), 1, 10)
    first, second = capture.calls([])[0], capture.calls([])[2]
    assert not first.replayable and "not made by a captured call" in first.problem
    assert not second.replayable and "over the inputs (no weights)" in second.problem


def test_a_parameter_without_gradient_is_state(torch):
    """MindSpore's BatchNorm moving statistics are Parameters with requires_grad=False: a
    replay keeps them Parameters but never trains them."""
    frozen = FakeParameter((4,))
    frozen.requires_grad = False
    Feeder(Capture()).function("torch.relu", (frozen,), result=_hidden(4))
    capture = Capture()
    Feeder(capture).function("torch.add", (frozen, FakeParameter((4,))), result=_hidden(4))
    assert [e.role for e in capture.externals()] == ["state", "parameter"]


# -- arguments as the script wrote them (issue 32, item 1) ---------------------------------------

# F.cross_entropy's literal keyword defaults, as trace/torch_intercept.py literal_defaults
# records them from its signature
CROSS_ENTROPY_DEFAULTS = frozenset({("size_average", type(None), None),
                                    ("reduce", type(None), None), ("weight", type(None), None),
                                    ("ignore_index", int, -100), ("reduction", str, "mean"),
                                    ("label_smoothing", float, 0.0)})
SOFTMAX_DEFAULTS = frozenset({("dim", type(None), None), ("_stacklevel", int, 3),
                              ("dtype", type(None), None)})


def _with_defaults(feed, api, defaults, args, kwargs, result):
    feed.capture.on_call(feed.index, CallSite("torch", api, FUNCTION, 0, defaults), args,
                         kwargs, result)
    feed.index += 1
    return feed.calls()[-1]


def test_keywords_the_signature_filled_in_are_not_recorded(torch):
    """F.cross_entropy(logits, y) reaches the function mode with every parameter by keyword:
    only what differs from the signature's defaults is the script's."""
    feed = Feeder(Capture())
    logits, labels = _hidden(4, 10), FakeTensor((4,), INT64, [1, 2, 3, 4])
    call = _with_defaults(feed, F + "cross_entropy", CROSS_ENTROPY_DEFAULTS, (logits, labels),
                          {"weight": None, "size_average": None, "ignore_index": -100,
                           "reduce": None, "reduction": "mean", "label_smoothing": 0.0},
                          _hidden())
    assert call.kwargs == () and len(call.args) == 2 and call.replayable


def test_a_keyword_the_script_set_to_another_value_is_kept(torch):
    feed = Feeder(Capture())
    call = _with_defaults(feed, F + "softmax", SOFTMAX_DEFAULTS, (_hidden(),),
                          {"dim": -1, "_stacklevel": 3, "dtype": None}, _hidden())
    assert call.kwargs == (("dim", Lit(-1)),)


def test_a_default_is_matched_by_type_too(torch):
    """label_smoothing=0 (an int) is not the float default's spelling; reduction 'sum' is not
    the default 'mean'."""
    feed = Feeder(Capture())
    call = _with_defaults(feed, F + "cross_entropy", CROSS_ENTROPY_DEFAULTS,
                          (_hidden(4, 10), _hidden(4)),
                          {"reduction": "sum", "ignore_index": True, "label_smoothing": 0.0},
                          _hidden())
    assert call.kwargs == (("reduction", Lit("sum")), ("ignore_index", Lit(True)))


def test_a_call_without_recorded_defaults_keeps_every_keyword(torch):
    feed = Feeder(Capture())
    feed.function("torch.sum", (_hidden(),), {"dim": None}, result=_hidden(1))
    assert feed.calls()[0].kwargs == (("dim", Lit(None)),)


COMPLEX64 = FakeDtype("complex64")
INT16 = FakeDtype("int16")
UINT16 = FakeDtype("uint16")   # a dtype no replay makes


def test_a_complex_result_is_recorded_with_its_dtype_and_read_as_a_ref(torch):
    """torch.fft.rfft2 returns complex64: recorded as such (the replay makes complex tensors
    from drawn real and imaginary parts), and the call reading it takes a Ref."""
    feed = Feeder(Capture())
    spectrum = feed.function("torch.fft.rfft2", (_hidden(8, 8),),
                             result=FakeTensor((8, 5), COMPLEX64))
    feed.function("torch.Tensor.abs", (spectrum,), result=_hidden(8, 5), kind=TENSOR_METHOD)
    first, second = feed.calls()
    assert first.outputs == ("tensor", (8, 5), "complex64")
    assert first.replayable and second.replayable
    assert second.args == (Ref(0),)


def test_a_call_returning_a_dtype_no_replay_makes_is_not_covered_and_says_why(torch):
    """A call returning uint16 and each call reading its output are not replayable, with the
    reason (the replay used to die on KeyError: 'complex64' when complex64 was such a dtype)."""
    feed = Feeder(Capture())
    narrow = feed.function("torch.Tensor.to", (_hidden(8, 8),),
                           result=FakeTensor((8, 8), UINT16), kind=TENSOR_METHOD)
    feed.function("torch.Tensor.float", (narrow,), result=_hidden(8, 8), kind=TENSOR_METHOD)
    first, second = feed.calls()
    assert first.outputs == ("other", "uint16 tensor")
    assert first.problem == ("it returns a uint16 tensor: the replay makes float16, "
                             "bfloat16, float32, float64, int32, int64, bool, int8, "
                             "int16, uint8, complex64, complex128 tensors only")
    assert not first.replayable and not second.replayable
    assert second.problem == "an argument a replay cannot rebuild (uint16 tensor)"


def test_an_external_of_a_dtype_no_replay_makes_is_opaque(torch):
    feed = Feeder(Capture())
    feed.function("torch.Tensor.float", (FakeTensor((4,), UINT16, [1, 2, 3, 4]),),
                  result=_hidden(4), kind=TENSOR_METHOD)
    assert feed.calls()[0].problem == "an argument a replay cannot rebuild (uint16 tensor)"


def test_a_tuple_result_with_an_unreplayable_dtype_is_not_covered(torch):
    """torch.frexp returns (mantissa, exponent): a replay makes float32 and int32, so it is
    replayable; one holding uint16 is not."""
    feed = Feeder(Capture())
    feed.function("torch.frexp", (_hidden(4),),
                  result=(_hidden(4), FakeTensor((4,), FakeDtype("int32"), [0, 1, 2, 3])))
    feed.function("torch.split", (FakeTensor((4,), UINT16, [0, 1, 2, 3]),),
                  result=(FakeTensor((4,), UINT16, [0, 1, 2, 3]),))
    frexp, narrow = feed.calls()
    assert frexp.replayable
    assert "uint16" in narrow.problem


def test_uint8_int8_and_int16_tensors_are_replayable(torch):
    """issue 45: a uint8 mask, an int8 or int16 tensor is carried (it ended a whole run with
    `unknown dtype 'uint8'`, then was a not-covered row)."""
    feed = Feeder(Capture())
    for name in ("uint8", "int8", "int16"):
        feed.function("torch.Tensor.float", (FakeTensor((4,), FakeDtype(name), [1, 2, 3, 4]),),
                      result=_hidden(4), kind=TENSOR_METHOD)
    assert all(call.replayable for call in feed.calls())


def test_the_replayable_dtypes_are_the_ones_the_frameworks_carry():
    from opbench.frameworks.dtypes import NUMPY_CARRIERS
    from opbench.model.capture.observer import REPLAYABLE_DTYPES
    assert set(REPLAYABLE_DTYPES) == set(NUMPY_CARRIERS)


# -- a long script stops when it has given enough (issue 32, item 6) -----------------------------

class Ended(Exception):
    pass


def _ending_capture(steps: int) -> Capture:
    def on_enough():
        raise Ended()
    return Capture(steps=steps, on_enough=on_enough)


def _step(feed, x):
    h = feed.function(F + "linear", (x, _hidden(8, 8)), result=_hidden(4, 8))
    return feed.function(F + "relu", (h,), result=_hidden(4, 8))


def test_the_marker_after_the_steps_wanted_ends_the_capture(torch):
    """A warm-up step and 3 steady steps: the fifth mark ends it, before that step's calls."""
    capture = _ending_capture(steps=3)
    feed = Feeder(capture)
    markers.activate(capture)
    try:
        x = _hidden()
        with pytest.raises(Ended):
            for _ in range(100):
                markers.step()
                x = _step(feed, x)
    finally:
        markers.deactivate()
    assert len(feed.calls()) == 4 * 2 and len(capture.markers) == 5 and capture.enough


def test_after_the_end_every_call_and_mark_ends_it_again(torch):
    """A script that caught the ending (a bare except) is ended at its next call."""
    capture = _ending_capture(steps=1)
    feed = Feeder(capture)
    for _ in range(2):                  # the warm-up step and one steady step
        capture.mark()
        _step(feed, _hidden())
    with pytest.raises(Ended):
        capture.mark()
    with pytest.raises(Ended):
        _step(feed, _hidden())
    with pytest.raises(Ended):
        capture.mark()
    assert len(feed.calls()) == 4


def test_without_marks_the_repeated_calls_end_the_capture(torch, monkeypatch):
    """A set-up, then the same two-call step for ever: the capture ends once the last calls
    repeat (checked every TAIL_CHECK_EVERY calls over at least TAIL_MIN_WINDOW)."""
    from opbench.model.capture import observer as capture_module
    from opbench.model import steady
    monkeypatch.setattr(capture_module, "TAIL_CHECK_EVERY", 8)
    monkeypatch.setattr(capture_module, "repeated_tail",
                        lambda codes, steps: steady.repeated_tail(codes, steps, min_window=16))
    capture = _ending_capture(steps=5)
    feed = Feeder(capture)
    for n in range(7):                                           # set-up: no repetition
        feed.function("torch.zeros", (n + 1,), result=_hidden(n + 1))
    with pytest.raises(Ended):
        for _ in range(1000):
            _step(feed, _hidden())
    calls = len(feed.calls())
    assert calls % 8 == 0 and 7 + 2 * 7 <= calls <= 7 + 2 * 7 + 8 + 16


def test_without_a_step_limit_the_capture_records_on(torch):
    capture = Capture(steps=None, on_enough=lambda: pytest.fail("ended"))
    feed = Feeder(capture)
    for _ in range(600):
        capture.mark()
        _step(feed, _hidden())
    assert len(feed.calls()) == 1200 and not capture.enough


# -- nn.LSTM and nn.EmbeddingBag (capture/sequence_lowering.py) -------------------------------

def _lstm(**overrides):
    settings = dict(_flat_weights=[FakeParameter((64, 32)), FakeParameter((64, 16)),
                                   FakeParameter((64,)), FakeParameter((64,))],
                    bias=True, num_layers=1, dropout=0.0, training=False, bidirectional=False,
                    batch_first=True, proj_size=0)
    return _ns(**{**settings, **overrides})


def test_an_lstm_is_torch_lstm_with_its_flat_weights_and_no_initial_state(torch):
    """Was "no function form for the layer torch.nn.LSTM" (75% of lstm_tagger_inference.py)."""
    feed = Feeder(Capture())
    feed.layer("torch.nn.LSTM", _lstm(), (FakeTensor((4, 12, 32)),),
               result=(_hidden(4, 12, 16), (_hidden(1, 4, 16), _hidden(1, 4, 16))))
    (call,) = feed.calls()
    assert call.replay_api == "torch.lstm" and call.problem is None
    assert call.args == (Ext(0), Lit(None), Seq("list", (Ext(1), Ext(2), Ext(3), Ext(4))),
                         Lit(True), Lit(1), Lit(0.0), Lit(False), Lit(False), Lit(True))


def test_an_lstm_on_a_packed_or_unbatched_input_or_with_proj_size_says_why(torch):
    feed = Feeder(Capture())
    packed = types.SimpleNamespace(data=FakeTensor((30, 32)))       # no shape
    feed.layer("torch.nn.LSTM", _lstm(), (packed,), result=_hidden())
    feed.layer("torch.nn.LSTM", _lstm(), (FakeTensor((12, 32)),), result=_hidden())
    feed.layer("torch.nn.LSTM", _lstm(proj_size=8), (FakeTensor((4, 12, 32)),),
               result=_hidden())
    problems = [c.problem for c in feed.calls()]
    assert all(c.replay_api is None for c in feed.calls())
    assert "PackedSequence" in problems[0] and "unbatched" in problems[1]
    assert "proj_size" in problems[2]


def _bag(**overrides):
    settings = dict(weight=FakeParameter((500, 32)), max_norm=None, sparse=False,
                    scale_grad_by_freq=False, mode="mean", include_last_offset=False,
                    padding_idx=None)
    return _ns(**{**settings, **overrides})


def test_an_embedding_bag_is_f_embedding_bag_with_its_offsets(torch):
    """Was "no function form for the layer torch.nn.EmbeddingBag" (19% of
    embedding_bag_text_classifier.py)."""
    feed = Feeder(Capture())
    tokens = FakeTensor((60,), INT64, values=np.arange(60))
    offsets = FakeTensor((5,), INT64, values=[0, 10, 25, 31, 44])
    feed.layer("torch.nn.EmbeddingBag", _bag(), (tokens, offsets), result=_hidden(5, 32))
    feed.layer("torch.nn.EmbeddingBag", _bag(mode="sum", padding_idx=0),
               (FakeTensor((4, 6), INT64),), result=_hidden(4, 32))
    first, second = feed.calls()
    assert first.replay_api == F + "embedding_bag" and first.problem is None
    assert first.args == (Ext(0), Ext(1), Ext(2)) and first.kwargs == (("mode", Lit("mean")),)
    assert second.args[2] == Lit(None)
    assert second.kwargs == (("mode", Lit("sum")), ("padding_idx", Lit(0)))


def test_an_embedding_bag_that_renormalises_or_has_sparse_gradients_says_why(torch):
    feed = Feeder(Capture())
    for layer in (_bag(max_norm=1.0), _bag(sparse=True), _bag(scale_grad_by_freq=True)):
        feed.layer("torch.nn.EmbeddingBag", layer, (FakeTensor((4, 6), INT64),),
                   result=_hidden(4, 32))
    problems = [c.problem for c in feed.calls()]
    assert "max_norm" in problems[0] and "sparse" in problems[1]
    assert "scale_grad_by_freq" in problems[2]


# -- layout and small values (capture/layout.py) --------------------------------------------------

class StridedTensor(FakeTensor):
    """A FakeTensor that also has what layout.py reads: its strides (in elements), indexing,
    reshape and tolist (over numpy: a broadcast view keeps numpy's stride 0), sum()."""

    def __init__(self, values, dtype=INT64):
        super().__init__(np.shape(values), dtype, values)

    def stride(self):
        return tuple(s // self.values.itemsize for s in self.values.strides)

    def __getitem__(self, index):
        return StridedTensor(self.values[index], self.dtype)

    def reshape(self, *shape):
        return StridedTensor(self.values.reshape(*shape), self.dtype)

    def tolist(self):
        return self.values.tolist()

    def sum(self):
        return _Scalar(self.values.sum())


BOOL = FakeDtype("bool")


def test_an_expanded_mask_keeps_its_base_shape_and_the_bases_values(torch):
    feed = Feeder(Capture())
    column = np.array([[False], [False], [True], [True]])
    pad = StridedTensor(np.broadcast_to(column, (4, 3)), BOOL)      # pad[:, None].expand
    feed.function("torch.where", (pad, FakeTensor((4, 3)), FakeTensor((4, 3))),
                  result=_hidden(4, 3))
    mask = feed.capture.externals()[0]
    assert (mask.shape, mask.expanded_from, mask.values) == ((4, 3), (4, 1), (0, 0, 1, 1))
    assert mask.dim_order is None and mask.true_fraction is None


def test_a_transposed_external_keeps_its_dim_order_and_a_contiguous_one_none(torch):
    feed = Feeder(Capture())
    weight_t = StridedTensor(np.zeros((8, 16), np.float32).T, FLOAT32)
    feed.function("torch.matmul", (StridedTensor(np.zeros((4, 16), np.float32), FLOAT32),
                                   weight_t), result=_hidden(4, 8))
    data, weight = feed.capture.externals()
    assert weight.dim_order == (1, 0) and weight.values is None
    assert data.dim_order is None and data.expanded_from is None


def test_small_integer_values_are_kept_and_large_ones_drawn_with_a_bools_true_share(torch):
    feed = Feeder(Capture())
    ids = StridedTensor(np.array([[2, 4, 9], [5, 6, 7]]))
    big_ids = StridedTensor(np.arange(5000) % 7)
    big_mask = StridedTensor(np.arange(8192) < 2048, BOOL)
    feed.function("torch.gather", (ids, big_ids, big_mask), result=_hidden())
    small, big, mask = feed.capture.externals()
    assert small.values == (2, 4, 9, 5, 6, 7)
    assert big.values is None and (big.low, big.high) == (0.0, 6.0)
    assert mask.values is None and mask.true_fraction == 0.25


def test_a_small_integer_output_carries_its_values_for_a_step_that_reads_it(torch):
    feed = Feeder(Capture())
    positions = StridedTensor(np.array([0, 1, 2]))
    feed.function("torch.arange", (3,), result=positions)
    out = feed.calls()[0].outputs
    assert out[:5] == ("tensor", (3,), "int64", 0.0, 2.0)
    assert dict(out[5]) == {"values": (0, 1, 2)}
    hash(out)                     # a described output stays hashable


def test_the_kept_values_stop_at_the_captures_budget(torch):
    capture = Capture()
    capture._values.budget = 5
    feed = Feeder(capture)
    feed.function("torch.add", (StridedTensor(np.arange(4)), StridedTensor(np.arange(4))),
                  result=_hidden())
    first, second = capture.externals()
    assert first.values == (0, 1, 2, 3) and second.values is None


class CountingTensor(StridedTensor):
    """A StridedTensor that counts its strides' reads (a traced tensor method)."""
    reads = 0

    def stride(self):
        CountingTensor.reads += 1
        return super().stride()


def test_a_mindspore_backward_or_compiled_call_reads_no_layout_outside_the_tracers_guard(torch):
    # ms_backward.py / ms_jit.py call these outside the tracer's guard: a tensor method
    # called then was recorded as the script's call (six Tensor.stride per step, in CI)
    capture = Capture()
    feed = Feeder(capture)
    w = CountingTensor(np.zeros((8,), np.float32), FLOAT32)
    loss = feed.function("torch.sum", (CountingTensor(np.zeros(8, np.float32), FLOAT32),),
                         result=CountingTensor(np.zeros((), np.float32), FLOAT32))
    before = CountingTensor.reads
    capture.backward(loss, [w], None, (loss, (CountingTensor(np.zeros(8, np.float32),
                                                             FLOAT32),)), 1, 10)
    capture.compiled("mindspore.jit", (CountingTensor(np.arange(3)),), {},
                     CountingTensor(np.arange(3)), "why", 2, 10)
    assert CountingTensor.reads == before
    ids = capture.externals()[-1]
    assert ids.values is None and (ids.low, ids.high) == (0.0, 2.0)
    feed.function("torch.relu", (CountingTensor(np.zeros(4, np.float32), FLOAT32),),
                  result=_hidden(4))
    assert CountingTensor.reads > before           # a traced call's tensors are read

# -- a layer with no function form is traced through (capture/lowering.py) -------------------

def test_a_layer_with_no_function_form_is_traced_through_and_one_with_a_rule_is_not():
    from opbench.model.capture.lowering import traced_through

    def site(api):
        return CallSite(api.split(".")[0], api, MODULE, skip=1)

    for api in ("torch.nn.TransformerEncoder", "torch.nn.GroupNorm", "torch.nn.GRU",
                "torch.nn.MultiheadAttention", "mindspore.nn.GRU"):
        assert traced_through(site(api), object(), (), {})
    # a layer with a rule stays one call, also one whose rule then refuses it (its reason)
    for api in ("torch.nn.Linear", "torch.nn.LSTM", "torch.nn.Embedding", "mindspore.nn.Dense"):
        assert not traced_through(site(api), object(), (), {})


# -- memory formats ---------------------------------------------------------------------------

class FakeMemoryFormat:
    def __init__(self, name: str):
        self.name = name


@pytest.fixture
def formats(torch):
    torch.preserve_format = FakeMemoryFormat("preserve_format")
    torch.contiguous_format = FakeMemoryFormat("contiguous_format")
    torch.channels_last = FakeMemoryFormat("channels_last")
    return torch


def test_a_memory_format_giving_the_calls_default_layout_is_dropped(formats):
    """transformers' generate: input_ids.clone(memory_format=torch.contiguous_format) on a
    contiguous tensor or a slice with gaps (what preserve_format, clone's default, makes
    contiguous too), a builtin whose defaults the signatures cannot read
    (hf_gpt2_generate.py, 1.1%)."""
    feed = Feeder(Capture())
    ids = FakeTensor((1, 8), INT64, values=np.arange(8).reshape(1, 8))
    window = FakeTensor((2, 4), INT64, values=np.arange(8).reshape(2, 4), strides=(8, 1))
    for tensor, memory_format in ((ids, formats.contiguous_format),
                                  (window, formats.contiguous_format),
                                  (ids, formats.preserve_format)):
        feed.function("torch.Tensor.clone", (tensor,), {"memory_format": memory_format},
                      result=FakeTensor(tensor.shape, INT64, values=tensor.values),
                      kind=TENSOR_METHOD)
    feed.function("torch.Tensor.contiguous", (_hidden(),),
                  {"memory_format": formats.contiguous_format}, result=_hidden(),
                  kind=TENSOR_METHOD)
    calls = feed.calls()
    assert [(c.kwargs, c.replayable) for c in calls] == [((), True)] * 4
    assert calls[0].args == (Ext(0),) and calls[1].args == (Ext(1),)


@pytest.mark.parametrize("api, memory_format, strides", [
    ("torch.Tensor.clone", "channels_last", None),           # a layout change
    ("torch.Tensor.clone", "contiguous_format", (1, 3)),     # a transposed input made
                                                             # contiguous: preserve keeps it
    ("torch.Tensor.contiguous", "preserve_format", None),    # not its default
])
def test_any_other_memory_format_leaves_the_call_uncovered(formats, api, memory_format,
                                                           strides):
    feed = Feeder(Capture())
    feed.function(api, (FakeTensor((3, 4), strides=strides),),
                  {"memory_format": getattr(formats, memory_format)},
                  result=_hidden(3, 4), kind=TENSOR_METHOD)
    (call,) = feed.calls()
    assert not call.replayable
    assert call.problem == "an argument a replay cannot rebuild (FakeMemoryFormat)"
