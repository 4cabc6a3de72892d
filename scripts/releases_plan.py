"""The plan of `nox -s releases`: its arguments turned into one install and one run per release.

    nox -s releases -- LIBRARY VERSION... [--no-index] [--find-links DIR] [--constraints FILE]
                       [--with REQUIREMENT] [--out-root DIR] [--system-site-packages]
                       [caiconform run options: --libraries ..., --checks ..., --seed N, ...]

The library and its versions come first, then options: those above shape the installs (the
same for every release, so the other libraries are fixed: the same index, wheels, constraints
and extra requirements; `--system-site-packages` lets each venv see the libraries installed
beside the interpreter, for a GPU machine where they are), any other goes to `caiconform run`
as given. Every release runs with one seed (`--seed`, default 1), so each draws the same
examples. With no arguments the session reads them from `CAICONFORM_RELEASES` (the same words).

A plain module with no caiconform import: noxfile.py loads it before anything is installed, and
tests/test_releases.py checks it without nox.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Release", "Plan", "PlanError", "plan", "constraints_without", "unmet"]

DEFAULT_OUT_ROOT = "runs/releases"
DEFAULT_SEED = "1"
#: options of the installs that take a value (repeatable)
_VALUED = ("--find-links", "--constraints", "--with", "--out-root")
_FLAGS = ("--no-index", "--system-site-packages")
#: `caiconform run` options the plan sets itself
_OURS = ("--out", "--resume")
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+!_-]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class PlanError(ValueError):
    """Arguments no plan can be made of (one line for the user)."""


@dataclass(frozen=True)
class Release:
    """One release: where its venv and run go, what pip installs, what `caiconform` runs."""

    library: str
    version: str
    venv: str
    out: str
    install: tuple[str, ...]
    run: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """Every release's install and run, and the `caiconform releases` command that charts them."""

    library: str
    releases: tuple[Release, ...]
    index: tuple[str, ...]
    constraints: str | None
    system_site_packages: bool
    chart: tuple[str, ...]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def plan(args: Sequence[str]) -> Plan:
    """The plan of the session's arguments (`session.posargs`); PlanError for arguments that
    name no library, no version, a version twice, or an option the plan sets itself."""
    words = list(args)
    head = []
    while words and not words[0].startswith("-"):
        head.append(words.pop(0))
    if not head or not _NAME.match(head[0]):
        raise PlanError("give the library and its versions: LIBRARY VERSION [VERSION ...]")
    library, versions = head[0], head[1:]
    if not versions:
        raise PlanError(f"give one or more versions of {library}")
    for version in versions:
        if not _VERSION.match(version):
            raise PlanError(f"{version!r} is not a version of {library}")
    repeated = sorted({v for v in versions if versions.count(v) > 1})
    if repeated:
        raise PlanError(f"{library} {', '.join(repeated)} given twice")
    chosen: dict[str, list[str]] = {name: [] for name in _VALUED}
    flags: set[str] = set()
    run: list[str] = []
    while words:
        word = words.pop(0)
        name, _, inline = word.partition("=")
        if name in _VALUED:
            value = inline or (words.pop(0) if words else "")
            if not value:
                raise PlanError(f"{name} needs a value")
            chosen[name].append(value)
        elif word in _FLAGS:
            flags.add(word)
        elif name in _OURS:
            raise PlanError(f"{name} is set by the plan: each release runs into its own directory")
        else:
            run.append(word)
    if len(chosen["--constraints"]) > 1 or len(chosen["--out-root"]) > 1:
        raise PlanError("--constraints and --out-root are given once")
    if not any(w == "--seed" or w.startswith("--seed=") for w in run):
        run += ["--seed", DEFAULT_SEED]
    index = (
        *(["--no-index"] if "--no-index" in flags else []),
        *(part for d in chosen["--find-links"] for part in ("--find-links", d)),
    )
    constraints = chosen["--constraints"][0] if chosen["--constraints"] else None
    root = chosen["--out-root"][0].rstrip("/") if chosen["--out-root"] else DEFAULT_OUT_ROOT
    releases = []
    for version in versions:
        name = f"{library}-{version}"
        out = f"{root}/{name}"
        install = (*index, "-e", ".", *chosen["--with"], f"{library}=={version}")
        releases.append(
            Release(library, version, f"releases-{name}", out, install, ("run", "--out", out, *run))
        )
    chart = ("releases", *(r.out for r in releases), "--library", library)
    chart += ("--out", f"{root}/{library}")
    return Plan(
        library,
        tuple(releases),
        tuple(index),
        constraints,
        "--system-site-packages" in flags,
        chart,
    )


def constraints_without(text: str, library: str) -> str:
    """A constraints file's text less its lines pinning `library` (a `pip freeze` of the
    environment the releases are compared in pins the library too; each release pins its own)."""
    kept = []
    for line in text.splitlines():
        name = re.split(r"[\s<>=!~;\[@]", line.strip(), maxsplit=1)[0]
        if name and _canonical(name) == _canonical(library):
            continue
        kept.append(line)
    return "\n".join(kept) + ("\n" if kept else "")


def unmet(library: str) -> list[str]:
    """What the installed `library` asks for that this environment does not hold ("needs
    cuda-core<1.0.0,>=0.5.1: 1.2.0 here"): a release run beside fixed libraries it was not
    built for says so in the summary (`scripts/gpu_releases.sh`)."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement

    try:
        requires = metadata.requires(library) or []
    except metadata.PackageNotFoundError:
        return [f"{library}: not installed"]
    lines = []
    for text in requires:
        need = Requirement(text)
        if need.marker is not None and not need.marker.evaluate({"extra": ""}):
            continue
        try:
            have = metadata.version(need.name)
        except metadata.PackageNotFoundError:
            lines.append(f"needs {need}: not installed")
            continue
        if need.specifier and not need.specifier.contains(have, prereleases=True):
            lines.append(f"needs {need}: {have} here")
    return lines


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] != ["unmet"] or len(sys.argv) != 3:
        sys.exit("usage: releases_plan.py unmet LIBRARY")
    for line in unmet(sys.argv[2]):
        print(line)
