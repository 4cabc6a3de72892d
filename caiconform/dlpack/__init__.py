"""DLPack's vocabulary in one home, as `caiconform.spec` is the CAI's: what every reader and
writer of a capsule in caiconform takes its structs, codes and readings from.

- `header`: dlpack.h written once: the ctypes structs, DLDeviceType and DLDataTypeCode, the
  flag bits, the capsule names, the C exchange API's function table (DLPack 1.3).
- `dtypes`: type codes <-> CAI typestr kinds and caiconform's named types, both directions.
- `devices`: `dlpack_device(obj)`, the one reading of `__dlpack_device__()`.
- `capsule`: a capsule read without consuming it (`read_capsule`, `Capsule`), a producer asked
  for one (`export`, `stream_for`), the capsule C-API bindings.
- `elements`: the numpy type of a capsule's elements and the read of host memory (device
  memory is read in `caiconform.reference.dlpack_read`, which needs the driver).
- `validate`: the capsule validator, `check_capsule` / `check_dlpack`: the capsule-visible
  DLPACK rules as findings.
- `exchange_api`: `read_exchange_api(obj_or_type)`, a type's `__dlpack_c_exchange_api__` read.
- `errors`: `DLPackError`, what the readers raise.

It sits in the lowest layer of the import contract beside `spec`, and imports nothing of
caiconform's but `caiconform.spec`. The names most callers use are here too: `Capsule`,
`DLPackError`, `export`, `read_capsule`.
"""

from __future__ import annotations

from caiconform.dlpack.capsule import Capsule, export, read_capsule
from caiconform.dlpack.errors import DLPackError

__all__ = ["Capsule", "DLPackError", "export", "read_capsule"]
