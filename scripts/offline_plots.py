"""An offline page for `dvc plots show`: DVC's HTML template with vega, vega-lite and vega-embed inline.

    python scripts/offline_plots.py [--out vendor/dvc_plots.html] [--force]

DVC's own page loads its charting scripts from a CDN, so without a network it stays blank. .dvc/config
points `plots.html_template` at the file this writes (vendor/, ignored by git): a page with the scripts of
the versions DVC itself asks for, fetched from the npm registry with `npm pack`, checked against the sha512
integrity pinned below, and inlined. The page `dvc plots show` writes (into `plots.out_dir`,
reports/dvc_plots/) then loads nothing from anywhere and opens from any folder. The template has no
`{scripts}` placeholder, so DVC adds none of its CDN tags. scripts/setup.sh runs this; a second run finds
the file up to date and fetches nothing.

Without npm it writes a page that says so above the plots, and exits 2.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# name -> (version, file in the package, npm integrity). The versions DVC's vega renderer loads
# (dvc_render.vega.VegaRenderer.SCRIPTS), so its plot specs render as DVC means them.
PACKAGES = {
    "vega": (
        "5.20.2",
        "build/vega.min.js",
        "sha512-qmH7aD9GGPpssVdxL1xgcdxTbQzyRUeRR16Os385ymvQhiwCYQNA6+eXUPAZDTVLfk0RXu6Jzj6kUE5jQ80EVw==",
    ),
    "vega-lite": (
        "5.2.0",
        "build/vega-lite.min.js",
        "sha512-Yxcg8MvYfxHcG6BbkaKT0oVCIMIcE19UvqIsEwBmyd/7h2nzW7oRnID81T8UrY7hpDrIr6wa2JADOT2dhGNErw==",
    ),
    "vega-embed": (
        "6.18.2",
        "build/vega-embed.min.js",
        "sha512-wcDyQPE4J5aiCDc3/suH5RQDvrKkjuLkhzUcbOLwEkNF8/+pp17tS0JghzEvAPNRg+5aG1/N2ydixq8Lk3dOlg==",
    ),
}
STAMP = "offline-plots: " + ", ".join(f"{n}@{v[0]}" for n, v in PACKAGES.items())
PAGE = """<!DOCTYPE html>
<html>
<head>
{{refresh_tag}}
<meta charset="utf-8">
<title>DVC plots</title>
<!-- {stamp}, inline (scripts/offline_plots.py): this page needs no network. -->
{scripts}
<style>
body {{ font-family: system-ui, sans-serif; }}
table {{ border-spacing: 15px; }}
</style>
</head>
<body>
{notice}
{{plot_divs}}
</body>
</html>
"""
NO_NPM = (
    '<p style="color: #b42318"><b>The charting scripts are not installed</b>: run '
    "<code>python scripts/offline_plots.py</code> where npm is available, then <code>dvc plots show</code> "
    "again. The plot data is in reports/plots/*.csv.</p>"
)


class FetchError(RuntimeError):
    """A package that could not be fetched or does not match its pinned integrity."""


def integrity(data: bytes) -> str:
    """npm's integrity string (sha512, base64) of a package tarball."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def fetch(name: str, version: str, member: str, pinned: str, workdir: Path) -> str:
    """The text of one file of an npm package, fetched with `npm pack` and checked against its integrity."""
    done = subprocess.run(
        ["npm", "pack", f"{name}@{version}", "--json", "--silent"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise FetchError(f"npm pack {name}@{version} failed: {done.stderr.strip().splitlines()[-1:]}")
    tarball = workdir / json.loads(done.stdout)[0]["filename"]
    data = tarball.read_bytes()
    if integrity(data) != pinned:
        raise FetchError(f"{name}@{version}: integrity {integrity(data)} is not the pinned {pinned}")
    with tarfile.open(tarball) as tar:
        f = tar.extractfile(f"package/{member}")
        if f is None:
            raise FetchError(f"{name}@{version}: no {member} in the package")
        return f.read().decode("utf-8")


def page(scripts: dict[str, str] | None) -> str:
    """The template: the scripts inline, or (None) a notice that they are missing."""
    if scripts is None:
        return PAGE.format(stamp="scripts missing", scripts="", notice=NO_NPM)
    # A script element ends at the first "</script"; none of the pinned files holds one, but escaping it
    # keeps the page whole whatever they hold.
    closing, escaped = "</script", "<\\/script"
    tags = "\n".join(
        f"<script>/* {n}@{PACKAGES[n][0]} */\n{js.replace(closing, escaped)}\n</script>"
        for n, js in scripts.items()
    )
    return PAGE.format(stamp=STAMP, scripts=tags, notice="")


def _write(out: Path, text: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)


def main(argv: list[str] | None = None) -> int:
    """Command line: write the offline template unless it is up to date."""
    ap = argparse.ArgumentParser(prog="python scripts/offline_plots.py", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out",
        type=Path,
        default=ROOT / "vendor" / "dvc_plots.html",
        help="template to write (default vendor/dvc_plots.html, which .dvc/config names)",
    )
    ap.add_argument("--force", action="store_true", help="fetch and write it even when it is up to date")
    args = ap.parse_args(argv)
    if not args.force and args.out.is_file() and STAMP in args.out.read_text(encoding="utf-8"):
        print(f"offline_plots: {args.out} is up to date ({STAMP.split(': ', 1)[1]})")
        return 0
    if shutil.which("npm") is None:
        _write(args.out, page(None))
        print(
            f"offline_plots: npm not found: wrote {args.out} without the charting scripts; install npm "
            "(Node.js) and run python scripts/offline_plots.py",
            file=sys.stderr,
        )
        return 2
    try:
        with tempfile.TemporaryDirectory() as tmp:
            scripts = {n: fetch(n, v, m, pin, Path(tmp)) for n, (v, m, pin) in PACKAGES.items()}
    except (FetchError, subprocess.TimeoutExpired, OSError) as e:
        print(f"offline_plots: {e}; {args.out} left as it was", file=sys.stderr)
        return 2
    _write(args.out, page(scripts))
    print(f"offline_plots: wrote {args.out} ({STAMP.split(': ', 1)[1]} inline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
