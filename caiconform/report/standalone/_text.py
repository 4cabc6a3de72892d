"""The pieces every standalone reproducer is written from, and the generator's own arithmetic.

A reproducer imports numpy, the standard library, `cuda.bindings` (the stand-in for
caiconform's reference producer and consumer: a few lines over the CUDA driver API) and the
libraries of the exchange; nothing of caiconform. Its helpers are source text here (`HELPERS`),
each included only when the script uses it. The generator itself runs inside caiconform and
imports of it only the libraries' lines, declared in their adapters (`libraries`,
`adapters._repro`: data, no library imported), and what those import; so a half-edited check
or runner module cannot stop a script being written: the byte extent and the decoding of the
journal's encoded dicts are repeated here in a few lines.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from dataclasses import dataclass
from typing import Any

from caiconform.adapters._repro import Array, c_strides
from caiconform.report.standalone import libraries
from caiconform.report.standalone._dlpack_helpers import HELPERS as _DLPACK_HELPERS

__all__ = [
    "DISTRIBUTIONS",
    "HELPERS",
    "MODULES",
    "Mask",
    "Unencodable",
    "OPAQUE",
    "STRUCTURED_DESCR",
    "Script",
    "array_of",
    "byte_extent",
    "decode",
    "literal",
    "import_block",
    "one_line",
    "source_of",
]

#: element types caiconform names that numpy has no typestr code for -> item size
OPAQUE = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
#: the structured dtype caiconform exchanges under the name "structured"
STRUCTURED_DESCR = [("a", "<f4"), ("b", "<i2"), ("c", "|u1"), ("", "|V1"), ("d", "<f8")]


def one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def byte_extent(shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int) -> tuple:
    """(lowest byte, one past the highest) touched relative to the data pointer; (0, 0) empty."""
    if any(extent == 0 for extent in shape):
        return (0, 0)
    lo = hi = 0
    for extent, stride in zip(shape, strides or c_strides(shape, itemsize), strict=True):
        reach = (extent - 1) * stride
        lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
    return (lo, hi + itemsize)


def array_of(params: dict) -> Array | None:
    """The Array of an example's params (`typestr` with `layout` or `shape`, `seed`); None
    when the typestr is one numpy cannot hold here."""
    typestr = params.get("typestr")
    layout = params.get("layout") or {"shape": params.get("shape") or [], "strides": None}
    if not isinstance(typestr, str):
        return None
    if typestr in OPAQUE:
        size = OPAQUE[typestr]
        dtype_src, export, descr = f"'V{size}'", (f"<V{size}" if size > 1 else "|V1"), None
    elif typestr == "structured":
        dtype_src, descr = repr(STRUCTURED_DESCR), [list(f) for f in STRUCTURED_DESCR]
        size, export = 16, "|V16"
    else:
        try:
            import numpy as np

            size = np.dtype(typestr).itemsize
        except TypeError:
            return None
        dtype_src, export, descr = repr(typestr), typestr, None
    shape = tuple(int(n) for n in layout.get("shape") or ())
    strides = layout.get("strides")
    strides = None if strides is None else tuple(int(s) for s in strides)
    offset, pad = int(layout.get("offset") or 0), int(layout.get("pad") or 0)
    lo, hi = byte_extent(shape, strides, size)
    source = (
        shape
        if strides is None
        else tuple(1 if s == 0 else n for n, s in zip(shape, strides, strict=True))
    )
    return Array(
        typestr=typestr,
        dtype_src=dtype_src,
        export_typestr=export,
        descr=descr,
        itemsize=size,
        shape=shape,
        strides=strides,
        offset=offset,
        alloc=max(offset + hi + pad, 1) if offset + lo >= 0 else max(hi - lo + pad, 1),
        seed=int(params.get("seed") or 0),
        source_shape=source,
    )


class Mask:
    """A `$cai` value of an encoded dict: an object exposing this interface (a mask)."""

    def __init__(self, desc: Any) -> None:
        self.desc = desc


class Unencodable(ValueError):
    """An encoded value the script cannot rebuild (an object whose attribute raises, ...)."""


def decode(value: Any) -> Any:
    """The journal's encoding of an interface dict (caiconform.checks._encoding.encode) back to
    Python values; a `$cai` object becomes a Mask. Unencodable for `$raising` / `$opaque`."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$tuple" in value:
        return tuple(decode(v) for v in value["$tuple"])
    if "$dict" in value:
        return {_hashable(decode(k)): decode(v) for k, v in value["$dict"]}
    if "$bytes" in value:
        return bytes.fromhex(value["$bytes"])
    if "$cai" in value:
        return Mask(decode(value["$cai"]))
    raise Unencodable(f"an encoded {next(iter(value), '?')} value")


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def literal(value: Any, pointers: dict[int, str] | None = None) -> str:
    """Python source for a decoded dict value. A Mask becomes `Exported({...})`; a `data`
    tuple whose id is in `pointers` gets that expression in place of its pointer."""
    pointers = pointers or {}
    if isinstance(value, Mask):
        return f"Exported({literal(value.desc, pointers)})"
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if key == "data" and id(item) in pointers:
                rest = "".join(f", {literal(v)}" for v in item[1:])
                items.append(f"{key!r}: ({pointers[id(item)]}{rest})")
            else:
                items.append(f"{literal(key)}: {literal(item, pointers)}")
        return "{" + ", ".join(items) + "}"
    if isinstance(value, tuple):
        inner = ", ".join(literal(v, pointers) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v, pointers) for v in value) + "]"
    return repr(value)


#: helper name -> source. A script carries a helper only where it, or a helper it carries,
#: refers to a name the helper defines; a helper comes before those that use it. Their imports
#: go to the script's top; the standard library's modules they use come from `MODULES`.
HELPERS: dict[str, str] = {
    "driver": """
        from cuda.bindings import driver as cu


        def ck(result):  # a cuda.bindings call's values, or RuntimeError naming its CUresult
            err, *rest = result if isinstance(result, tuple) else (result,)
            if err != cu.CUresult.CUDA_SUCCESS:
                raise RuntimeError(f"CUDA driver error {err.name}")
            return rest[0] if len(rest) == 1 else rest


        ck(cu.cuInit(0))  # the device's primary context: the one every library shares
        ck(cu.cuCtxSetCurrent(ck(cu.cuDevicePrimaryCtxRetain(ck(cu.cuDeviceGet(0))))))
        """,
    "upload": """
        def upload(image):  # a new device allocation holding the bytes of a uint8 host array
            ptr = int(ck(cu.cuMemAlloc(max(image.nbytes, 1))))
            ck(cu.cuMemcpyHtoD(ptr, image.ctypes.data, image.nbytes))
            return ptr
        """,
    "Exported": """
        class Exported:  # a producer reduced to its export: a literal __cuda_array_interface__
            def __init__(self, desc, owner=None):
                self.desc, self.owner = desc, owner

            @property
            def __cuda_array_interface__(self):
                return dict(self.desc)
        """,
    "read_at": """
        def read_at(ptr, shape, dtype, strides=None, stream=None):
            # the elements at ptr (byte strides; None: C order) copied to the host on `stream`
            # (default: a non-blocking stream of our own, which waits for nothing)
            if 0 in shape:
                return np.empty(shape, dtype)
            steps = tuple(strides) if strides else np.empty(shape, dtype).strides
            lo = sum((n - 1) * s for n, s in zip(shape, steps) if s < 0)
            hi = sum((n - 1) * s for n, s in zip(shape, steps) if s > 0) + dtype.itemsize
            raw = np.empty(hi - lo, np.uint8)
            flags = cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value
            stream = cu.CUstream(int(ck(cu.cuStreamCreate(flags)) if stream is None else stream))
            ck(cu.cuMemcpyDtoHAsync(raw.ctypes.data, ptr + lo, hi - lo, stream))
            ck(cu.cuStreamSynchronize(stream))
            return np.ndarray(shape, dtype, buffer=raw, offset=-lo, strides=steps).copy()
        """,
    "read_back": """
        def read_back(desc):  # a conforming consumer: wait on the exported stream, then copy
            if desc.get("stream"):
                ck(cu.cuStreamSynchronize(cu.CUstream(desc["stream"])))
            dtype = np.dtype(desc["typestr"])
            if dtype.kind == "V" and any(field[0] for field in desc.get("descr") or ()):
                dtype = np.dtype([tuple(field) for field in desc["descr"]])
            return read_at(desc["data"][0], tuple(desc["shape"]), dtype, desc.get("strides"))
        """,
    "sleep_on": """
        _libcuda = ctypes.CDLL("libcuda.so.1")
        _libcuda.cuLaunchHostFunc.argtypes = [ctypes.c_void_p] * 3
        _USLEEP = ctypes.cast(ctypes.CDLL(None).usleep, ctypes.c_void_p)


        def sleep_on(stream, us):
            # hold a stream (a raw handle; 0 or 1 legacy, 2 per-thread) for `us` microseconds:
            # libc's usleep enqueued as a host function, so the GPU stays free meanwhile
            while us > 0:
                chunk = min(us, 500_000)
                assert _libcuda.cuLaunchHostFunc(stream, _USLEEP, chunk) == 0, "cuLaunchHostFunc"
                us -= chunk
        """,
    "differ": """
        def differ(got, want):  # None when got holds want's values bit for bit, else what differs
            got = np.asarray(got)
            if got.shape != want.shape:
                return f"shape {got.shape}, expected {want.shape}"
            if got.dtype != want.dtype and got.dtype.itemsize == want.dtype.itemsize:
                got = got.astype(want.dtype) if got.dtype.kind != "V" else got.view(want.dtype)
            a, b = (np.ascontiguousarray(x).view(np.uint8).reshape(-1, want.itemsize) for x in (got, want))
            bad = np.flatnonzero((a != b).any(axis=1))
            if bad.size == 0:
                return None
            at = np.unravel_index(bad[0], want.shape) if want.shape else ()
            seen, wanted = repr(got[at]), repr(want[at])
            if seen == wanted:  # values that print alike (a bool of byte 0xfe): their bytes
                seen, wanted = a[bad[0]].tobytes().hex(), b[bad[0]].tobytes().hex()
            return (f"{bad.size} of {want.size} elements differ; first at {tuple(map(int, at))}: "
                    f"got {seen}, expected {wanted}")
        """,
    "verdict": """
        def verdict(bug, line):  # the reproducer's one line: BUG (exit 1) or OK (exit 0)
            print(("BUG: " if bug else "OK: ") + " ".join(str(line).split()))
            sys.exit(1 if bug else 0)
        """,
    "vmm": """
        def guarded(nbytes, guard):
            # nbytes of device memory followed by `guard` bytes of reserved, unmapped addresses:
            # every read past the end faults
            prop = cu.CUmemAllocationProp()
            prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
            prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            prop.location.id = 0
            flag = cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
            grain = int(ck(cu.cuMemGetAllocationGranularity(prop, flag)))
            size = -(-nbytes // grain) * grain
            base = int(ck(cu.cuMemAddressReserve(size + -(-guard // grain) * grain, 0, 0, 0)))
            ck(cu.cuMemMap(base, size, 0, ck(cu.cuMemCreate(size, prop, 0)), 0))
            access = cu.CUmemAccessDesc()
            access.location = prop.location
            access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            ck(cu.cuMemSetAccess(base, size, [access], 1))
            return base
        """,
    **_DLPACK_HELPERS,  # dlpack.h's structs, a capsule's reader and builder
}
#: the modules a script's code refers to by name -> the import line that binds the name
MODULES = {
    name: f"import {name}"
    for name in ("ctypes", "gc", "os", "signal", "subprocess", "sys", "traceback")
}
MODULES["np"] = "import numpy as np"


@dataclass(frozen=True)
class Helper:
    """A helper's source split: its import lines, the rest, the names it binds at module level
    (its imports' among them) and the names it refers to."""

    imports: tuple[str, ...]
    code: str
    defines: frozenset[str]
    uses: frozenset[str]


def _bound(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level: functions, classes, assignments, imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def _split(source: str) -> Helper:
    """`source`'s top-level import lines apart from the rest (which keeps its blank lines)."""
    text = textwrap.dedent(source).strip("\n")
    tree = ast.parse(text)
    lines = text.splitlines()
    cut = {
        i
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for i in range(node.lineno - 1, node.end_lineno or node.lineno)
    }
    imports = tuple(lines[i].strip() for i in sorted(cut))
    code = "\n".join(line for i, line in enumerate(lines) if i not in cut).strip("\n")
    uses = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    return Helper(imports, code, frozenset(_bound(tree)), uses)


_PARSED = {name: _split(source) for name, source in HELPERS.items()}


def _closure(wanted: set[str], given: set[str]) -> list[str]:
    """The helpers defining a name in `wanted` (none of `given`) and those they use, in
    HELPERS' order."""
    taken: list[str] = []
    todo = set(wanted) - given
    while todo:
        name = todo.pop()
        for key, helper in _PARSED.items():
            if name in helper.defines and key not in taken:
                taken.append(key)
                todo |= helper.uses - helper.defines - given
    return [key for key in HELPERS if key in taken]


def _module(line: str) -> str:
    return line.split()[1].lower()


def import_block(lines: list[str]) -> str:
    """The script's top: the standard library's imports, then lines setting the environment
    (the libraries read it at import), then the other imports, each group sorted, then the
    remaining lines (a library's settings, after its import)."""
    unique = list(dict.fromkeys(lines))
    imports = [line for line in unique if line.split()[0] in ("import", "from")]
    std = [line for line in imports if _module(line).split(".")[0] in sys.stdlib_module_names]
    rest = [line for line in unique if line not in imports]
    groups = [
        sorted(std, key=lambda line: (_module(line), line)),
        [line for line in rest if "os.environ" in line],
        sorted(set(imports) - set(std), key=lambda line: (_module(line), line)),
        [line for line in rest if "os.environ" not in line],
    ]
    return "\n\n".join("\n".join(group) for group in groups if group)


def source_of(*names: str, given: tuple[str, ...] = ()) -> str:
    """Imports and helpers defining `names` (and what they use; `given`: names the caller
    binds itself): the helpers as a script would carry them, for a namespace of one's own."""
    keys = _closure(set(names), set(given))
    code = [_PARSED[key].code for key in keys]
    used = set().union(*(_PARSED[key].uses for key in keys)) - set(given)
    lines = [line for key in keys for line in _PARSED[key].imports]
    lines += [MODULES[name] for name in sorted(used & set(MODULES))]
    return "\n\n\n".join([import_block(lines), *code]) + "\n"


#: import prefix -> the distribution it comes from, for what a script imports besides the
#: libraries of the exchange (whose adapters name theirs: `libraries.distributions`)
DISTRIBUTIONS = {"cuda.bindings": "cuda-bindings"}


class Script:
    """A reproducer under construction: header comments, imports, its body. The helpers it
    carries are those its body refers to (and what they use); every import goes to the top."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.comments: list[str] = []
        self.imports: list[str] = ["import numpy as np"]
        self.body: list[str] = []

    def comment(self, text: str) -> None:
        for line in textwrap.wrap(one_line(text), width=94) or [""]:
            self.comments.append(f"# {line}")

    def imp(self, *lines: str) -> None:
        for line in lines:
            if line not in self.imports:
                self.imports.append(line)

    def add(self, source: str) -> None:
        self.body.append(textwrap.dedent(source).strip("\n"))

    def parts(self) -> tuple[list[str], list[str], list[str]]:
        """(import lines, helpers carried, body pieces without their top-level imports)."""
        imports, body = list(self.imports), []
        for piece in self.body:
            split = _split(piece)
            imports += split.imports
            body.append(split.code)
        tree = ast.parse("\n\n".join(body))
        uses = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        helpers = _closure(uses, _bound(tree))
        for name in helpers:
            imports += _PARSED[name].imports
            uses |= _PARSED[name].uses
        bound = _bound(
            ast.parse("\n".join(i for i in imports if i.split()[0] in ("import", "from")))
        )
        imports += [MODULES[name] for name in sorted(uses & set(MODULES) - bound)]
        return imports, helpers, [piece for piece in body if piece]

    def code(self) -> str:
        """Imports, helpers and body: what a child process runs for a crash reproducer."""
        imports, helpers, body = self.parts()
        parts = [import_block(imports), *(_PARSED[name].code for name in helpers), *body]
        return "\n\n\n".join(parts) + "\n"

    def needs(self) -> str:
        """The header's line naming the distributions the imports come from."""
        dists = ["numpy"]
        known = {**DISTRIBUTIONS, **libraries.distributions()}
        for line in self.parts()[0]:
            words = line.replace(",", " ").split()
            module = words[1] if len(words) > 1 and words[0] in ("import", "from") else ""
            for prefix, dist in known.items():
                if (module == prefix or module.startswith(prefix + ".")) and dist not in dists:
                    dists.append(dist)
        return f"# Needs: {', '.join(dists)} (and nothing of caiconform)."

    def render(self, needs: str | None = None) -> str:
        doc = textwrap.fill(one_line(self.title), width=94)
        head = f'"""{doc}\n\nRun with: python this_file.py  (prints one BUG: or OK: line)\n"""\n'
        comments = [*self.comments, needs or self.needs()]
        return head + "\n".join(comments) + "\n\n" + self.code()
