"""lifetime: the consumer's view is kept, the producer dropped; an allocation freed while a
view that aliases it is alive is the finding.

The producer here owns its allocation: dropping its last reference frees it with cuMemFree and
says so. The consumer imports the export with its public call and keeps the object; the
script drops the producer and collects garbage. A consumer that copied on import needs nothing
kept; one whose object points into the allocation must keep the producer alive.
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone import libraries as libs
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script"]

_OWNER = '''
FREED = []


class Owner(Exported):
    """A producer that owns its allocation and frees it when dropped."""

    def __del__(self):
        ck(cu.cuCtxSynchronize())
        ck(cu.cuMemFree(self.base))
        FREED.append(self.base)
'''


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    held = libs.hold(consumer or "")
    if array is None or held is None or array.size == 0:
        return None
    rule = group.get("rule") or "CAI-LIFETIME-DATA-HELD"
    context = ex.context_of(array)
    if group.get("outcome") == "rejected-valid":
        from caiconform.report.standalone import roundtrip

        return roundtrip.script(group, params, None, consumer)
    s = Script(f"lifetime: the producer dropped while {consumer}'s view of it is alive [{rule}].")
    ex.header(s, group)
    ex.add(s, held)
    ex.values(s, array)
    ex.image(s, array)
    s.add(_OWNER)
    s.add(
        f"""
        import gc

        obj = Owner({ex.interface(array, "upload(image)")})
        obj.base = obj.desc["data"][0]
        base, size = obj.base, image.nbytes
        print("exported:", obj.desc)
        {held.code}
        try:
            at = view.__cuda_array_interface__["data"][0]
        except Exception:
            at = getattr(view, "ptr", None)
        aliased = isinstance(at, int) and base <= at < base + size
        del obj
        gc.collect()
        gc.collect()
        if FREED and aliased:
            verdict(True, f"the allocation was freed while {consumer}'s view of it (at {{at:#x}}) "
                          f"was alive ({context}); expected the owner kept alive by the view [{rule}]")
        if FREED:
            verdict(False, f"{consumer} copied on import (its data at {{at}}); the producer was freed")
        verdict(False, f"{consumer}'s view keeps the producer alive ({context})")
        """
    )
    return s.render()
