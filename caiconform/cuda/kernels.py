"""NVRTC kernels the reference producer and consumer use, compiled once per architecture and
kept on disk for every process (`cubin`), loaded once per process and device.

fill      scatter a contiguous staging buffer of element bytes to arbitrary byte strides
gather    the reverse: read elements at arbitrary strides into a contiguous buffer
checksum  a 64-bit, order-sensitive hash of the logical elements read at their strides
compare   count mismatching bytes of two contiguous buffers
spin      hold a stream for a given time, to leave work pending on purpose: a host-side sleep
          (`hostwait`), or a busy-wait kernel (clock64 and the global timer) where host
          functions cannot be enqueued

Strides are signed 64-bit byte counts and may be negative, zero or not a multiple of the item
size. Each strided kernel exists in typed variants (1, 2, 4, 8, 16-byte words: used when the
data pointer and every stride are multiples of the item size) and a byte-copy variant for any
item size (up to MAX_ITEMSIZE) and any alignment, each with 32-bit and 64-bit linear indexing (64-bit when
the element count reaches 2**31). The source is plain text built here, so a CPU machine can
check it and its argument packing without a driver.
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from dataclasses import dataclass

import numpy as np

from caiconform.cuda.errors import CUDAError, call
from caiconform.diskcache import DiskBuilds, cache_dir

__all__ = [
    "MAX_NDIM",
    "MAX_ITEMSIZE",
    "StridedSpec",
    "kernel_source",
    "compile_kernels",
    "cubin",
    "CACHE_ENV",
    "kernel_names",
    "word_type",
    "index_bits",
    "host_checksum",
    "fill",
    "gather",
    "checksum",
    "compare",
    "spin",
    "spin_kernel",
    "clock_rate_khz",
]

MAX_NDIM = 8
#: The byte-copy variants loop over an item's bytes, so any size works; this bounds the
#: per-thread work (a 'U1024' item is 4 KiB).
MAX_ITEMSIZE = 1 << 12
BLOCK = 256
#: Odd 64-bit multiplier (2**64 / golden ratio) that folds an item's 8-byte words into one word.
WORD_MIX = 0x9E3779B97F4A7C15

#: Typed word size -> C type used for loads and stores.
_WORD_TYPES = {1: "u8", 2: "u16", 4: "u32", 8: "u64", 16: "u128"}
_OPS = ("fill", "gather", "checksum")


def word_type(itemsize: int, ptr: int, strides: tuple[int, ...]) -> str:
    """Kernel variant for an item: a typed word when every access is aligned to the item size,
    else "bytes" (byte-by-byte copy, any size and alignment)."""
    if itemsize in _WORD_TYPES and ptr % itemsize == 0 and all(s % itemsize == 0 for s in strides):
        return _WORD_TYPES[itemsize]
    return "bytes"


def index_bits(count: int) -> int:
    """32-bit linear indexing while every index fits a signed int, else 64-bit."""
    return 32 if count < 2**31 else 64


def kernel_names() -> list[str]:
    """Every extern "C" kernel the source defines."""
    names = [
        f"{op}_{word}_i{bits}"
        for op in _OPS
        for word in (*_WORD_TYPES.values(), "bytes")
        for bits in (32, 64)
    ]
    return [*names, "compare_bytes", "spin_cycles"]


_PRELUDE = r"""
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
struct alignas(16) u128 { u64 lo, hi; };

#define MAX_NDIM 8
#define WORD_MIX 0x9E3779B97F4A7C15ULL

struct Dims { i64 n[MAX_NDIM]; i64 s[MAX_NDIM]; };

#define DIM_PARAMS \
    i64 n0, i64 n1, i64 n2, i64 n3, i64 n4, i64 n5, i64 n6, i64 n7, \
    i64 s0, i64 s1, i64 s2, i64 s3, i64 s4, i64 s5, i64 s6, i64 s7
#define DIM_INIT \
    Dims d = {{n0, n1, n2, n3, n4, n5, n6, n7}, {s0, s1, s2, s3, s4, s5, s6, s7}}

/* Byte offset of C-order linear index i (dims beyond ndim are ignored). */
template <typename I>
__device__ __forceinline__ i64 offset_of(I i, int ndim, const Dims& d) {
    i64 off = 0;
    #pragma unroll
    for (int k = MAX_NDIM - 1; k >= 0; --k) {
        if (k < ndim) {
            I n = (I)d.n[k];
            I idx = i % n;
            i /= n;
            off += (i64)idx * d.s[k];
        }
    }
    return off;
}

__device__ __forceinline__ u64 word_of(u8 v) { return v; }
__device__ __forceinline__ u64 word_of(u16 v) { return v; }
__device__ __forceinline__ u64 word_of(u32 v) { return v; }
__device__ __forceinline__ u64 word_of(u64 v) { return v; }
__device__ __forceinline__ u64 word_of(u128 v) { return v.lo + v.hi * WORD_MIX; }

/* Fold an item's bytes (little-endian 8-byte words, the last zero-padded) into one word. */
__device__ __forceinline__ u64 word_of_bytes(const u8* p, int itemsize) {
    u64 acc = 0, mul = 1;
    for (int w = 0; w < itemsize; w += 8) {
        u64 word = 0;
        for (int b = 0; b < 8 && w + b < itemsize; ++b) word |= (u64)p[w + b] << (8 * b);
        acc += word * mul;
        mul *= WORD_MIX;
    }
    return acc;
}

__device__ __forceinline__ void reduce_add(u64 a, u64 b, u64* out) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, o);
        b += __shfl_down_sync(0xffffffffu, b, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(out, a);
        atomicAdd(out + 1, b);
    }
}
"""

_TYPED = r"""
extern "C" __global__ void fill_{W}_i{B}(u8* dst, const u8* src, u64 begin, u64 end,
                                         int ndim, DIM_PARAMS) {{
    DIM_INIT;
    const {W}* s = (const {W}*)src;
    for ({I} i = ({I})begin + ({I})blockIdx.x * blockDim.x + threadIdx.x; i < ({I})end;
         i += ({I})gridDim.x * blockDim.x)
        *({W}*)(dst + offset_of<{I}>(i, ndim, d)) = s[i];
}}
extern "C" __global__ void gather_{W}_i{B}(u8* dst, const u8* src, u64 count,
                                           int ndim, DIM_PARAMS) {{
    DIM_INIT;
    {W}* o = ({W}*)dst;
    for ({I} i = ({I})blockIdx.x * blockDim.x + threadIdx.x; i < ({I})count;
         i += ({I})gridDim.x * blockDim.x)
        o[i] = *(const {W}*)(src + offset_of<{I}>(i, ndim, d));
}}
extern "C" __global__ void checksum_{W}_i{B}(u64* out, const u8* src, u64 count,
                                             int ndim, DIM_PARAMS) {{
    DIM_INIT;
    u64 plain = 0, weighted = 0;
    for ({I} i = ({I})blockIdx.x * blockDim.x + threadIdx.x; i < ({I})count;
         i += ({I})gridDim.x * blockDim.x) {{
        u64 w = word_of(*(const {W}*)(src + offset_of<{I}>(i, ndim, d)));
        plain += w;
        weighted += w * (2ULL * (u64)i + 1ULL);
    }}
    reduce_add(plain, weighted, out);
}}
"""

_BYTES = r"""
extern "C" __global__ void fill_bytes_i{B}(u8* dst, const u8* src, u64 begin, u64 end,
                                           int ndim, DIM_PARAMS, int itemsize) {{
    DIM_INIT;
    for ({I} i = ({I})begin + ({I})blockIdx.x * blockDim.x + threadIdx.x; i < ({I})end;
         i += ({I})gridDim.x * blockDim.x) {{
        u8* p = dst + offset_of<{I}>(i, ndim, d);
        const u8* q = src + (u64)i * itemsize;
        for (int b = 0; b < itemsize; ++b) p[b] = q[b];
    }}
}}
extern "C" __global__ void gather_bytes_i{B}(u8* dst, const u8* src, u64 count,
                                             int ndim, DIM_PARAMS, int itemsize) {{
    DIM_INIT;
    for ({I} i = ({I})blockIdx.x * blockDim.x + threadIdx.x; i < ({I})count;
         i += ({I})gridDim.x * blockDim.x) {{
        const u8* p = src + offset_of<{I}>(i, ndim, d);
        u8* q = dst + (u64)i * itemsize;
        for (int b = 0; b < itemsize; ++b) q[b] = p[b];
    }}
}}
extern "C" __global__ void checksum_bytes_i{B}(u64* out, const u8* src, u64 count,
                                               int ndim, DIM_PARAMS, int itemsize) {{
    DIM_INIT;
    u64 plain = 0, weighted = 0;
    for ({I} i = ({I})blockIdx.x * blockDim.x + threadIdx.x; i < ({I})count;
         i += ({I})gridDim.x * blockDim.x) {{
        u64 w = word_of_bytes(src + offset_of<{I}>(i, ndim, d), itemsize);
        plain += w;
        weighted += w * (2ULL * (u64)i + 1ULL);
    }}
    reduce_add(plain, weighted, out);
}}
"""

_MISC = r"""
extern "C" __global__ void compare_bytes(u64* out, const u8* a, const u8* b, u64 nbytes) {
    u64 bad = 0;
    u64 words = nbytes / 8;
    const u64* a8 = (const u64*)a;
    const u64* b8 = (const u64*)b;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (u64)gridDim.x * blockDim.x) {
        u64 x = a8[i] ^ b8[i];
        for (int k = 0; k < 8; ++k) bad += ((x >> (8 * k)) & 0xffULL) != 0;
    }
    for (u64 i = words * 8 + (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nbytes;
         i += (u64)gridDim.x * blockDim.x)
        bad += a[i] != b[i];
    reduce_add(bad, 0ULL, out);
}
__device__ __forceinline__ u64 global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
/* Busy-wait until both `cycles` SM clocks and `ns` nanoseconds of the global timer have
   passed: the clock count alone runs short when the SM clocks above its nominal rate. */
extern "C" __global__ void spin_cycles(i64 cycles, u64 ns) {
    if (threadIdx.x != 0) return;
    i64 start = clock64();
    u64 t0 = global_ns();
    while (clock64() - start < cycles || global_ns() - t0 < ns) { }
}
"""


def kernel_source() -> str:
    """The complete CUDA C++ source of every kernel (no headers needed)."""
    parts = [_PRELUDE]
    for bits, itype in ((32, "u32"), (64, "u64")):
        for word in _WORD_TYPES.values():
            parts.append(_TYPED.format(W=word, B=bits, I=itype))
        parts.append(_BYTES.format(B=bits, I=itype))
    parts.append(_MISC)
    return "".join(parts)


@dataclass(frozen=True)
class StridedSpec:
    """The arguments every strided kernel shares: shape and byte strides padded to MAX_NDIM.

    Dimensions of extent 1 are dropped and a 0-d array becomes shape (1,), so the index
    arithmetic only divides where it must.
    """

    ndim: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    count: int

    @classmethod
    def make(cls, shape: tuple[int, ...], strides: tuple[int, ...]) -> StridedSpec:
        if len(shape) != len(strides):
            raise ValueError(f"shape {shape} and strides {strides} differ in length")
        if len(shape) > MAX_NDIM:
            raise ValueError(f"at most {MAX_NDIM} dimensions are supported, got {len(shape)}")
        kept = [(n, s) for n, s in zip(shape, strides, strict=True) if n != 1] or [(1, 0)]
        dims, steps = zip(*kept, strict=True)
        return cls(len(dims), tuple(dims), tuple(steps), math.prod(shape))

    def dim_args(self) -> list[np.int64]:
        pad = MAX_NDIM - self.ndim
        return [np.int64(n) for n in (*self.shape, *([1] * pad), *self.strides, *([0] * pad))]


def host_checksum(values: np.ndarray) -> tuple[int, int]:
    """What the checksum kernel returns for `values` (C order, its dtype's bytes), on the host.

    Each item's bytes are read as little-endian 8-byte words (the last zero-padded) and folded
    into one word w_i = sum_k word_k * WORD_MIX**k; the result is (sum w_i, sum w_i*(2i+1)),
    both mod 2**64. The index weight makes it sensitive to elements landing in the wrong place.
    Works in chunks so multi-GiB arrays need little extra memory.
    """
    flat = np.ascontiguousarray(values).reshape(-1)
    itemsize = flat.dtype.itemsize
    raw = flat.view(np.uint8).reshape(-1, itemsize) if flat.size else np.empty((0, itemsize))
    nwords = (itemsize + 7) // 8
    plain = weighted = np.uint64(0)
    chunk = max(1, (1 << 25) // nwords)
    words_view = flat.view(f"<u{itemsize}") if itemsize in (1, 2, 4, 8) else None
    with np.errstate(over="ignore"):
        for start in range(0, flat.size, chunk):
            part = raw[start : start + chunk]
            if words_view is not None:  # one zero-extended little-endian word per item
                folded = words_view[start : start + chunk].astype(np.uint64)
            else:
                padded = np.zeros((part.shape[0], nwords * 8), dtype=np.uint8)
                padded[:, :itemsize] = part
                words = padded.view("<u8")
                folded = np.zeros(part.shape[0], dtype=np.uint64)
                mul = np.uint64(1)
                for k in range(nwords):
                    folded += words[:, k] * mul
                    mul = mul * np.uint64(WORD_MIX)
            index = np.arange(start, start + part.shape[0], dtype=np.uint64)
            part_sum = folded.sum(dtype=np.uint64)
            plain += part_sum
            weighted += np.uint64(2) * np.dot(folded, index) + part_sum
    return int(plain), int(weighted)


# ---- compilation and launches (need a GPU) --------------------------------------------------

_compile_lock = threading.Lock()


def compile_kernels(arch: str):
    """Compile the kernel source with NVRTC for `arch` (e.g. "sm_90"); needs NVRTC, no GPU."""
    from cuda.core import Program, ProgramOptions

    program = Program(
        kernel_source(),
        code_type="c++",
        options=ProgramOptions(name="caiconform_kernels", arch=arch, std="c++17"),
    )
    try:
        return program.compile("cubin")
    except Exception as exc:  # NVRTC's own exception types differ between cuda.core versions
        raise CUDAError("nvrtcCompileProgram", None, str(exc)) from exc


#: where the compiled kernels are kept for every process of a run (and later runs); default
#: `<tempdir>/caiconform-kernels-<uid>`
CACHE_ENV = "CAICONFORM_KERNEL_CACHE"


def _cubin_name(arch: str) -> str:
    """The disk cache's name for the kernels compiled for `arch`: what the cubin depends on (the
    source, the architecture, the NVRTC and cuda-core that built it), hashed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        compiler = f"nvrtc {major}.{minor}"
    except Exception:  # noqa: BLE001 -- compile_kernels meets and reports it
        compiler = "nvrtc ?"
    try:
        core = version("cuda-core")
    except PackageNotFoundError:
        core = "?"
    key = "\n".join((kernel_source(), arch, compiler, core))
    return f"kernels-{arch}-{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def cubin(arch: str, builds: DiskBuilds | None = None) -> tuple[bytes, str]:
    """The kernels compiled for `arch` as a cubin, and where it came from: "disk" (another
    process compiled it) or "compiled" (here, and written for the others).

    Why: every worker child is a fresh process, and NVRTC would compile this source in each,
    seconds in the first example of every new child, the one after each crash or poisoned
    context (docs/performance.md). One file lock per key: a process that finds
    another compiling waits for it and reads its cubin."""
    builds = builds or DiskBuilds(cache_dir(CACHE_ENV, "kernels"))
    name = _cubin_name(arch)
    with builds.locked(name):
        blob = builds.read(name)
        if blob:
            return blob, "disk"
        blob = bytes(compile_kernels(arch).code)
        builds.write(name, blob)
        return blob, "compiled"


def _discard_cubin(arch: str) -> None:
    DiskBuilds(cache_dir(CACHE_ENV, "kernels")).discard(_cubin_name(arch))


@functools.cache
def _arch(device: int) -> str:
    from cuda.core import Device

    major, minor = Device(device).compute_capability
    return f"sm_{major}{minor}"


@functools.cache
def _module(device: int, fresh: bool = False):
    """The kernels for `device`'s architecture, loaded once per process: from the disk cache
    (`cubin`), or compiled here when `fresh` (the cached cubin would not load)."""
    from cuda.core import ObjectCode

    arch = _arch(device)
    if fresh:
        return compile_kernels(arch)
    blob, _source = cubin(arch)
    return ObjectCode.from_cubin(blob, name="caiconform_kernels")


_kernels: dict[tuple[int, str], object] = {}


def _kernel(name: str, device: int):
    """The loaded kernel `name` for `device` (compiling or reading the module on first use).
    A cached cubin that does not load (written by another toolkit under the same key, or
    damaged) is discarded and the kernels compiled here."""
    key = (device, name)
    kernel = _kernels.get(key)
    if kernel is None:
        with _compile_lock:
            try:
                kernel = _module(device).get_kernel(name)
            except Exception:  # noqa: BLE001 -- a GPU error is raised again just below
                kernel = _module(device, fresh=True).get_kernel(name)
                _discard_cubin(_arch(device))  # the cached cubin did not load, a fresh one did
            _kernels[key] = kernel
    return kernel


@functools.cache
def _sm_count(device: int) -> int:
    from cuda.core import Device

    return Device(device).properties.multiprocessor_count


def _stream(handle: int):
    """A cuda.core Stream for a raw handle (1 legacy, 2 per-thread, else a cudaStream_t)."""
    from cuda.core import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream

    if handle in (0, 1):
        return LEGACY_DEFAULT_STREAM
    if handle == 2:
        return PER_THREAD_DEFAULT_STREAM
    return Stream.from_handle(handle)


def _launch(name: str, device: int, stream: int, work: int, *args) -> None:
    from cuda.core import LaunchConfig, launch

    from caiconform.cuda.device import ensure_context

    ensure_context(device)
    blocks = max(1, min(math.ceil(work / BLOCK), _sm_count(device) * 16))
    try:
        launch(
            _stream(stream), LaunchConfig(grid=blocks, block=BLOCK), _kernel(name, device), *args
        )
    except CUDAError:
        raise
    except Exception as exc:  # cuda.core raises its own CUDAError type; name the launch
        raise CUDAError(f"launch {name}", None, str(exc)) from exc


def _strided_args(spec: StridedSpec, word: str, itemsize: int) -> list:
    args: list = [np.int32(spec.ndim), *spec.dim_args()]
    if word == "bytes":
        args.append(np.int32(itemsize))
    return args


def fill(
    dst: int,
    src: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    itemsize: int,
    *,
    stream: int = 1,
    device: int = 0,
    begin: int = 0,
    end: int | None = None,
) -> None:
    """Enqueue: element i (C order) of contiguous `src` goes to `dst + offset(i)`, for i in
    [begin, end). `dst` is the data pointer (element 0), not the allocation start."""
    _check_itemsize(itemsize)
    spec = StridedSpec.make(shape, strides)
    end = spec.count if end is None else end
    if end <= begin:
        return
    word = word_type(itemsize, dst, spec.strides)
    name = f"fill_{word}_i{index_bits(spec.count)}"
    args = [np.uint64(dst), np.uint64(src), np.uint64(begin), np.uint64(end)]
    _launch(name, device, stream, end - begin, *args, *_strided_args(spec, word, itemsize))


def gather(
    dst: int,
    src: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    itemsize: int,
    *,
    stream: int = 1,
    device: int = 0,
) -> None:
    """Enqueue: element i (C order) at `src + offset(i)` goes to contiguous `dst`."""
    _check_itemsize(itemsize)
    spec = StridedSpec.make(shape, strides)
    if spec.count == 0:
        return
    word = word_type(itemsize, src, spec.strides)
    name = f"gather_{word}_i{index_bits(spec.count)}"
    args = [np.uint64(dst), np.uint64(src), np.uint64(spec.count)]
    _launch(name, device, stream, spec.count, *args, *_strided_args(spec, word, itemsize))


def checksum(
    out: int,
    src: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    itemsize: int,
    *,
    stream: int = 1,
    device: int = 0,
) -> None:
    """Enqueue: add the (plain, weighted) checksum of the strided elements to the two uint64
    at `out` (zero them first). `host_checksum` computes the same on the host."""
    _check_itemsize(itemsize)
    spec = StridedSpec.make(shape, strides)
    if spec.count == 0:
        return
    word = word_type(itemsize, src, spec.strides)
    name = f"checksum_{word}_i{index_bits(spec.count)}"
    args = [np.uint64(out), np.uint64(src), np.uint64(spec.count)]
    _launch(name, device, stream, spec.count, *args, *_strided_args(spec, word, itemsize))


def compare(out: int, a: int, b: int, nbytes: int, *, stream: int = 1, device: int = 0) -> None:
    """Enqueue: add the number of differing bytes of contiguous `a` and `b` to the uint64 at
    `out` (zero it first; the second uint64 at `out` is left unchanged, 0 added)."""
    if nbytes == 0:
        return
    if a % 8 or b % 8:
        raise ValueError("compare needs 8-byte aligned buffers")
    _launch(
        "compare_bytes",
        device,
        stream,
        nbytes // 8 + 1,
        np.uint64(out),
        np.uint64(a),
        np.uint64(b),
        np.uint64(nbytes),
    )


@functools.cache
def clock_rate_khz(device: int = 0) -> int:
    """The device's peak SM clock: spinning for us * clock_rate_khz / 1000 cycles takes at least
    `us` microseconds (a lower clock only makes it longer)."""
    from cuda.bindings import driver

    dev = call(driver.cuDeviceGet, device)
    return call(
        driver.cuDeviceGetAttribute, driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev
    )


def spin(stream: int, us: int, *, device: int = 0) -> None:
    """Hold `stream` for at least `us` microseconds: work enqueued after it starts no sooner.

    Works on any library's raw stream handle: adapters use it to leave pending work on a
    third-party producer's own side stream. A host-side sleep (`hostwait`) where it can be
    enqueued, which leaves the GPU free for other processes' contexts; else a one-thread
    busy-wait kernel (`spin_kernel`).
    """
    from caiconform.cuda import hostwait

    if not hostwait.available():
        spin_kernel(stream, us, device=device)
        return
    from caiconform.cuda.device import ensure_context

    ensure_context(device)
    hostwait.sleep_on_stream(stream, us)


def spin_kernel(stream: int, us: int, *, device: int = 0) -> None:
    """Enqueue a one-thread kernel that busy-waits at least `us` microseconds on `stream`
    (it occupies the GPU's time slice meanwhile: see `hostwait`)."""
    if us < 0:
        raise ValueError(f"spin duration must be >= 0 us, got {us}")
    from caiconform.cuda.device import ensure_context

    ensure_context(device)
    cycles = us * clock_rate_khz(device) // 1000
    from cuda.core import LaunchConfig, launch

    try:
        launch(
            _stream(stream),
            LaunchConfig(grid=1, block=32),
            _kernel("spin_cycles", device),
            np.int64(cycles),
            np.uint64(us * 1000),
        )
    except Exception as exc:
        raise CUDAError("launch spin_cycles", None, str(exc)) from exc


def _check_itemsize(itemsize: int) -> None:
    if not 1 <= itemsize <= MAX_ITEMSIZE:
        raise ValueError(f"item size must be 1..{MAX_ITEMSIZE} bytes, got {itemsize}")
