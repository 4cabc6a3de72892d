"""The pytest plugin on a GPU, judging what a library claims (issue 40, item 6): a producer whose
objects expose only `__cuda_array_interface__` (CuPy arrays wrapped in a class with that one
property) is skipped by the DLPack families and charged no DLPack defect; the same arrays with
their `__dlpack__` are judged by them."""

from __future__ import annotations

import textwrap

import pytest

pytestmark = pytest.mark.gpu
pytest_plugins = ["pytester"]

WRAPPED = textwrap.dedent(
    """
    import cupy


    class Wrapped:
        \"\"\"A CuPy array seen through the CUDA Array Interface alone.\"\"\"

        def __init__(self, array):
            self._array = array

        @property
        def __cuda_array_interface__(self):
            return self._array.__cuda_array_interface__


    def make_array(values, layout, typestr, stream_scenario):
        return Wrapped(cupy.asarray(values))


    def make_cupy(values, layout, typestr, stream_scenario):
        return cupy.asarray(values)
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    from caiconform.adapters.cupy_adapter import CupyAdapter

    ok, why = CupyAdapter().available()
    if not ok:
        pytest.skip(why)
    pytester.makepyfile(wrapped=WRAPPED)
    pytester.syspathinsert()
    return pytester


def _dlpack_items() -> list[str]:
    from caiconform.pytest_plugin.campaign import family_roles

    return [
        f.name
        for f in family_roles()
        if "dlpack" in f.protocols and f.roles in ("pair", "producer")
    ]


def test_a_cai_only_producer_has_no_dlpack_defect_on_a_gpu(project):
    families = _dlpack_items()
    args = ("-k", " or ".join(families), "-p", "no:cacheprovider", "--cai-max-examples", "5")
    result = project.runpytest_subprocess("--cai-producer", "wrapped:make_array", *args)
    out = result.stdout.str()
    assert "have no __dlpack__" in out, out
    assert "DLPACK-" not in out, out
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes and outcomes.get("skipped") == len(families), out
    # the same arrays with their own __dlpack__ are judged: the families run, not skip
    judged = project.runpytest_subprocess("--cai-producer", "wrapped:make_cupy", *args)
    assert "have no __dlpack__" not in judged.stdout.str()
    assert judged.parseoutcomes().get("skipped", 0) < len(families), judged.stdout.str()
