"""The reference DLPack producer and consumer on a GPU: ReferenceArray.__dlpack__ into
torch.from_dlpack and cupy.from_dlpack with the deleter counted, the reference consumer
(`caiconform.reference.dlpack_import`) reading torch's and CuPy's capsules, every `stream`
value, dl_device/copy, and the two DLPack families end to end.

Run on a GPU machine; everything here skips with the reason elsewhere (no GPU, library missing).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from caiconform import dlpack
from caiconform.cuda import gpu_available
from caiconform.results.outcome import PASS, REJECTED
from caiconform.results.record import EXPECT_REJECTION
from caiconform.spec.layout import Layout

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]

VALUES = np.arange(12, dtype=np.float32).reshape(3, 4)


def _collect() -> None:
    gc.collect()
    gc.collect()


def _ref(values=VALUES, layout=None, **kwargs):
    from caiconform.reference.producer import ReferenceArray

    return ReferenceArray(values, layout or Layout(values.shape), values.dtype.str, **kwargs)


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_reference_producer_into_a_library_with_the_deleter_called_once(library):
    lib = pytest.importorskip(library)
    ref = _ref()
    exports = ref.dlpack_exports
    got = lib.from_dlpack(ref)
    assert len(exports) == 1
    host = got.cpu().numpy() if library == "torch" else lib.asnumpy(got)
    np.testing.assert_array_equal(host, VALUES)
    del ref
    _collect()
    assert exports[0].deleter_calls == 0, "released while the library's array is alive"
    del got
    _collect()
    assert exports[0].deleter_calls == 1 and exports[0].by_destructor == 0


def test_legacy_and_versioned_capsules_and_their_flags():
    ref = _ref(readonly=True)
    versioned = dlpack.read_capsule(ref.__dlpack__(max_version=(1, 0), stream=-1))
    assert versioned.version == (1, 3) and versioned.readonly and not versioned.copied
    assert versioned.strides == tuple(s // ref.itemsize for s in ref.strides)  # never NULL
    with pytest.raises(BufferError):  # a legacy capsule cannot say read-only
        ref.__dlpack__(stream=-1)
    plain = _ref()
    legacy = plain.__dlpack__(stream=-1)
    assert dlpack.read_capsule(legacy).version is None
    del legacy
    _collect()
    assert [e.deleter_calls for e in plain.dlpack_exports] == [1]


@pytest.mark.parametrize("stream", [None, 1, 2, "handle", -1])
def test_each_stream_value_is_honoured(stream):
    """The pending write (a spin, then the final values, on the array's own non-blocking
    stream) is ordered before the stream named: waiting for that stream alone is enough to
    read the values [DLPACK-STREAM-PRODUCER-SYNC]; None is the legacy default stream."""
    from caiconform.cuda.streams import OwnedStream, synchronize_stream
    from caiconform.reference.consumer import consume

    ref = _ref(stream_scenario="pending")
    own = OwnedStream()
    value = own.handle if stream == "handle" else stream
    capsule = ref.__dlpack__(stream=value, max_version=(1, 0))
    assert dlpack.read_capsule(capsule).pointer == ref.ptr
    if value != -1:
        synchronize_stream(1 if value is None else value)
        read = consume({**ref.__cuda_array_interface__, "stream": None}, sync="ignore")
        np.testing.assert_array_equal(read.values, VALUES)
    del capsule
    _collect()
    assert [e.deleter_calls for e in ref.dlpack_exports] == [1]
    with pytest.raises(ValueError):
        ref.__dlpack__(stream=0)


def test_the_reference_consumer_passes_its_own_stream_and_reads_pending_work():
    from caiconform.reference.dlpack_import import import_dlpack

    result = import_dlpack(_ref(stream_scenario="pending"))
    np.testing.assert_array_equal(result.values, VALUES)
    assert result.calls[0]["max_version"] == (1, 3) and result.stream not in (None, 0, -1)


def test_dl_device_kdlcpu_gives_a_host_copy_and_copy_true_a_device_copy():
    ref = _ref()
    host = np.from_dlpack(_Kw(ref, dl_device=(1, 0)))
    np.testing.assert_array_equal(host, VALUES)
    with pytest.raises(BufferError):
        ref.__dlpack__(dl_device=(1, 0), copy=False, max_version=(1, 0))
    with pytest.raises(BufferError):
        ref.__dlpack__(dl_device=(2, 99), max_version=(1, 0))
    copied = dlpack.read_capsule(ref.__dlpack__(copy=True, max_version=(1, 0), stream=1))
    assert copied.copied and copied.pointer != ref.ptr


class _Kw:
    """Adds fixed keywords to every __dlpack__ call (numpy.from_dlpack passes dl_device only
    through its own `device=` argument)."""

    def __init__(self, obj, **kwargs):
        self.obj, self.kwargs = obj, kwargs

    def __dlpack__(self, **kwargs):
        return self.obj.__dlpack__(**{**kwargs, **self.kwargs, "stream": None})

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_the_reference_consumer_reads_library_capsules(library):
    from caiconform.reference.dlpack_import import import_dlpack

    lib = pytest.importorskip(library)
    if library == "torch":
        obj = lib.arange(12, dtype=lib.float32, device="cuda").reshape(3, 4)[:, ::2]
    else:
        obj = lib.arange(12, dtype=lib.float32).reshape(3, 4)[:, ::2]
    result = import_dlpack(obj)
    np.testing.assert_array_equal(result.values, VALUES[:, ::2])
    assert isinstance(result.stream, int) and result.stream not in (0, -1)


@pytest.mark.parametrize("consumer", ["reference", "torch", "cupy"])
def test_dlpack_lifetime_on_the_reference_producer(consumer):
    from caiconform.checks import dlpack_lifetime

    if consumer != "reference":
        pytest.importorskip(consumer)
    result = dlpack_lifetime.execute(
        {"typestr": "<f4", "shape": [3, 4], "seed": 1}, "reference", consumer
    )
    assert result.outcome == PASS, result.message


@pytest.mark.parametrize("producer", ["torch", "cupy"])
def test_dlpack_lifetime_on_other_producers_into_the_reference_consumer(producer):
    from caiconform.checks import dlpack_lifetime

    pytest.importorskip(producer)
    result = dlpack_lifetime.execute(
        {"typestr": "<f4", "shape": [3, 4], "seed": 1}, producer, "reference"
    )
    assert result.outcome == PASS, result.message


@pytest.mark.parametrize("kind", ["float6-bits", "version-major-2", "null-deleter", "used-capsule"])
def test_dlpack_adversarial_on_the_reference_consumer(kind):
    from caiconform.checks import dlpack_adversarial

    result = dlpack_adversarial.execute({"kind": kind}, None, "reference")
    if kind in dlpack_adversarial.LEGAL:
        assert result.outcome == PASS, result.message
    else:
        assert (result.outcome, result.expected) == (REJECTED, EXPECT_REJECTION), result.message
