"""The pytest plugin on a GPU, judging a user's DLPack consumer (`--cai-dlpack-consumer`) with the
dlpack_consumer family against the reference producer: one that asks `__dlpack__` for no
synchronization and reads at once is red under DLPACK-STREAM-PRODUCER-SYNC, one that calls the
deleter before it reads is red under DLPACK-CONSUMER-READS-DESCRIBED, and caiconform's own
DLPack consumer, wrapped as a user's function, stays green. With `--cai-from-dlpack`, a
from_dlpack returning the producer's memory under copy=True is red under DLPACK-FROM-COPY-TRUE
and one that copies stays green. (GPU tests: the CPU tests of the options are in
tests/test_plugin_claims.py.)"""

from __future__ import annotations

import textwrap

import pytest

pytestmark = pytest.mark.gpu
pytest_plugins = ["pytester"]

CONSUMERS = textwrap.dedent(
    """
    import numpy as np

    from caiconform.dlpack.capsule import read_capsule
    from caiconform.dlpack.elements import element_type
    from caiconform.reference import dlpack_export as dx
    from caiconform.reference.dlpack_import import import_dlpack
    from caiconform.reference.dlpack_read import read_elements


    def _eager(obj, release_first):
        capsule = obj.__dlpack__(stream=-1, max_version=(1, 3))  # no synchronization asked
        tensor = read_capsule(capsule)
        address = dx.consume_name(capsule)
        if release_first:
            dx.call_deleter(address, True)
        values = np.array(read_elements(tensor, element_type(tensor), None))
        if not release_first:
            dx.call_deleter(address, True)
        return values


    def read_at_once(obj):
        return _eager(obj, False)


    def release_first(obj):
        return _eager(obj, True)


    def clean(obj):
        return np.asarray(import_dlpack(obj).values)
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    from caiconform.cuda import gpu_available

    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"needs a GPU: {why}")
    pytester.makepyfile(userlib=CONSUMERS)
    pytester.syspathinsert()
    return pytester


def _run(project, function: str):
    return project.runpytest_subprocess(
        "--cai-dlpack-consumer",
        f"userlib:{function}",
        "--cai-name",
        "userlib",
        "--cai-protocol",
        "dlpack",
        "--cai-against",
        "reference",
        "--cai-max-examples",
        "5",
        "-k",
        "dlpack_consumer",
        "-p",
        "no:cacheprovider",
    )


@pytest.mark.parametrize(
    ("function", "rule"),
    [
        ("read_at_once", "DLPACK-STREAM-PRODUCER-SYNC"),
        ("release_first", "DLPACK-CONSUMER-READS-DESCRIBED"),
    ],
)
def test_an_eager_consumer_is_red_with_the_rule(project, function, rule) -> None:
    result = _run(project, function)
    out = result.stdout.str()
    assert result.parseoutcomes().get("failed") == 1, out
    assert rule in out, out


def test_a_clean_consumer_stays_green(project) -> None:
    result = _run(project, "clean")
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes and outcomes.get("passed", 0) >= 1, result.stdout.str()


FROM_DLPACK = textwrap.dedent(
    """
    import numpy as np

    from caiconform.reference.dlpack_import import import_dlpack
    from caiconform.reference.producer import ReferenceArray
    from caiconform.spec.layout import Layout


    def ignores_copy(obj, *, copy=None, device=None):
        return obj  # the producer's own memory, whatever copy asked


    def copies(obj, *, copy=None, device=None):
        if not copy:
            return obj  # a view: what copy=False and copy=None may give
        values = np.asarray(import_dlpack(obj).values)
        return ReferenceArray(values, Layout(values.shape), values.dtype.str)  # new memory
    """
)


@pytest.mark.parametrize(("function", "red"), [("ignores_copy", True), ("copies", False)])
def test_a_from_dlpack_ignoring_copy_true_is_red_and_one_that_copies_green(
    project, function, red
) -> None:
    """`--cai-from-dlpack`: the copy case calls the user's from_dlpack with copy and device, then
    reads its result again after the producer's memory changed."""
    project.makepyfile(userfrom=FROM_DLPACK)
    result = project.runpytest_subprocess(
        "--cai-dlpack-consumer",
        "userlib:clean",
        "--cai-from-dlpack",
        f"userfrom:{function}",
        "--cai-name",
        "userlib",
        "--cai-protocol",
        "dlpack",
        "--cai-against",
        "reference",
        "--cai-max-examples",
        "12",
        "-k",
        "dlpack_consumer",
        "-p",
        "no:cacheprovider",
    )
    out = result.stdout.str()
    outcomes = result.parseoutcomes()
    if red:
        assert outcomes.get("failed") == 1 and "DLPACK-FROM-COPY-TRUE" in out, out
    else:
        assert "failed" not in outcomes and outcomes.get("passed", 0) >= 1, out
        assert "DLPACK-FROM-COPY-TRUE" not in out, out
