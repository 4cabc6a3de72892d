"""caiconform: conformance tests and a validator for the CUDA Array Interface and Numba's EMM.

`caiconform.validate` is the pure, fast validator; everything that touches a GPU or a
third-party library is imported only where it is used.
"""

from caiconform.spec.rules import RULES, Level, Rule

__version__ = "0.1.0"

__all__ = ["RULES", "Level", "Rule", "validate", "__version__"]


def __getattr__(name: str):
    if name == "validate":
        from caiconform.spec.validate import validate

        return validate
    raise AttributeError(f"module 'caiconform' has no attribute {name!r}")
