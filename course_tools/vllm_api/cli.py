"""The check itself: each collected name looked up in a source tree (the 0.26.0 wheel, the installed vLLM
or a folder), and the command line ``python -m course_tools.vllm_api``."""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from pathlib import Path

from course_utils.paths import BUILD
from course_tools.vllm_api.course import collect
from course_tools.vllm_api.names import SHOWN_ABSENT
from course_tools.vllm_api.tree import Tree


def compare(uses: dict, tree: Tree) -> list[dict]:
    """One row per name the course uses: found in the vLLM source tree, or how it is missing."""
    rows = []
    for (kind, name), use in sorted(uses.items()):
        found = tree.has(kind, name)
        absent = name in SHOWN_ABSENT
        note = SHOWN_ABSENT.get(name) or (tree.chain_problem(name) if kind == "attr" and not found else "")
        rows.append({"kind": kind, "name": name, "where": ", ".join(sorted(use.where)),
                     "status": ("shown absent" if absent and not found else "found" if found else "MISSING"),
                     "note": note})
    return rows


def installed_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("no vLLM is installed in this environment")
    return Path(list(spec.submodule_search_locations)[0]).parent


def wheel_source(version: str, cache: Path = BUILD) -> Path:
    """The ``.py`` files of the ``vllm==version`` wheel, unpacked under ``cache/vllm-<version>/src``.

    Downloaded once with ``pip download --no-deps`` (about 300 MB; pip's own cache makes a repeat
    cheap) into the ignored ``build/`` folder, unpacked beside it and only then moved into place (an
    interrupted unpacking leaves no half tree). Raises RuntimeError if it cannot be fetched, OSError or
    zipfile.BadZipFile if it cannot be unpacked.
    """
    import subprocess

    folder = cache / f"vllm-{version}"
    src = folder / "src"
    if (src / "vllm" / "__init__.py").is_file():
        return src
    wheels = sorted(folder.glob(f"vllm-{version}-*.whl"))
    if not wheels:
        out = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm=={version}",
                              "-d", str(folder)], capture_output=True, text=True)
        wheels = sorted(folder.glob(f"vllm-{version}-*.whl"))
        if out.returncode != 0 or not wheels:
            raise RuntimeError(f"could not download vllm=={version}: {(out.stderr or out.stdout).strip()[-300:]}")
    partial = folder / "src.partial"
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(partial, [n for n in z.namelist() if n.endswith(".py")])
    shutil.rmtree(src, ignore_errors=True)
    partial.rename(src)
    return src


def source_tree(args) -> Tree:
    """The vLLM source tree the command line names (``--wheel``, ``--installed`` or ``--root``)."""
    if args.wheel:
        return Tree(wheel_source(args.wheel))
    return Tree(installed_root() if args.installed else args.root)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_tools.vllm_api", description=sys.modules[__package__].__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--root", type=Path, help="a folder holding vllm/ (e.g. an unpacked wheel)")
    where.add_argument("--installed", action="store_true", help="the vLLM installed in this environment")
    where.add_argument("--wheel", metavar="VERSION", help="the vllm==VERSION wheel from PyPI (e.g. 0.26.0)")
    ap.add_argument("--require", action="store_true",
                    help="fail (exit 1), not skip, when the source tree cannot be had (a wheel that cannot be fetched)")
    ap.add_argument("--all", action="store_true", help="print every name, not only the summary and the missing ones")
    args = ap.parse_args(argv)
    try:
        tree = source_tree(args)
    except (RuntimeError, OSError, zipfile.BadZipFile) as e:
        if args.require or not args.wheel:
            print(f"check-vllm-api: FAILED: no vLLM source tree to check against: {e}", file=sys.stderr)
            return 1
        print(f"check-vllm-api: skipped: {e} (with --require this fails)")
        return 0
    rows = compare(collect(), tree)
    missing = [r for r in rows if r["status"] == "MISSING"]
    shown = rows if args.all else missing + [r for r in rows if r["status"] == "shown absent"]
    width = max((len(r["name"]) for r in shown), default=4)
    print(f"vLLM {tree.version()} at {tree.root}: {len(rows)} names used by the labs, course_utils and course_tools")
    for r in shown:
        print(f"  {r['status']:<12} {r['kind']:<8} {r['name']:<{width}}  used in {r['where']}"
              + (f"  ({r['note']})" if r["note"] else ""))
    counts = {k: sum(r["kind"] == k for r in rows) for k in dict.fromkeys(r["kind"] for r in rows)}
    print("checked:", ", ".join(f"{n} {k}" for k, n in counts.items()))
    print(f"{len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
