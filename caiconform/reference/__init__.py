"""caiconform's own side of every exchange, the baseline other libraries are judged against.

The reference producer (`producer`: a device array laid out exactly as asked) and consumer
(`consumer`: refuses what is invalid, reads what is valid, never faults), the live checks only
the driver can answer (`live`), a tracking memory manager that records every free (`tracking`),
the reference Numba EMM plugin (`emm`, with `suballoc`) and CUDA IPC without Numba (`ipc`).
"""
