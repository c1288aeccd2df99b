"""Results files written only by the code that measured them, and their index.

    python benchmarks/results_io.py            # regenerate benchmarks/results/README.md and protocol.json
    python benchmarks/results_io.py --check    # exit 1 when either is not what the files give

A benchmark writes its `benchmarks/results/<name>.json` with `write_result`, which merges its keys into
the file (keys another script wrote are kept: merged by code, never by hand) and stamps `_meta`: the
command, the UTC date, the commit the code was at, and the protocol range (vla.protocol) of the seeds
its figures come from. The index is a pure function of the files' contents (no clock, no git), so the
same files give the same README.md byte for byte; files written before `_meta` existed say so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
INDEX = RESULTS / "README.md"
META = "_meta"
FIGURES_SHOWN = 4  # key figures per line of the index
PROTOCOL = RESULTS / "protocol.json"
# The headline figures the README and the issues quote: (name, file, key; a dotted key goes into nested
# objects). protocol.json lists each with the range its file's `_meta` records: a figure is held out when
# its seeds are `report`, or when it has no seeds and its file says what no choice was made on.
HEADLINES = [
    ("main_job_pretrained_success", "main_job.json", "main_job_pretrained_success"),
    ("main_job_refined_success", "main_job.json", "main_job_refined_success"),
    ("main_job_refine_gain", "main_job.json", "main_job_refine_gain_95"),
    ("main_job_refined_minus_control", "main_job_control.json", "refined_minus_control"),
    ("ensemble_minus_plain", "ensemble_report.json", "over_trainings"),
    ("imagination_gain_vs_control", "imagination.json", "paired_gain_vs_control"),
    ("imagination_gain_vs_demos_only", "imagination.json", "paired_gain_vs_demos_only"),
    ("reguide_can_ft_gain_vs_matched", "reguide_can_state_pos_d10.json", "ft_floor_gain_vs_matched"),
    ("dsrl_minus_zero_noise", "dsrl.json", "final_minus_zero_noise"),
    ("grounding_heldout_wrong", "grounding.json", "heldout_wrong"),
]


def commit() -> str:
    """The commit the measuring code is at ("-dirty" when the tree has uncommitted changes)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def command_line() -> str:
    """This process's command as a person would type it from the repository root."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:  # `python -m tests.hostile.store_soak`: a module under tests/
        return " ".join(["python", "-m", spec.name, *sys.argv[1:]])
    script = Path(sys.argv[0])
    with contextlib.suppress(ValueError):  # a script outside the repository keeps its own path
        script = script.resolve().relative_to(ROOT)
    return " ".join(["python", str(script), *sys.argv[1:]])


def write_result(name: str, figures: dict[str, Any], *, seed_range: str, key_figures: list[str] | None = None,
                 command: str | None = None, held_out: str = "", results: Path = RESULTS, index: bool = True,
                 code_commit: str | None = None) -> Path:
    """Merge `figures` into `results/<name>.json`, stamp `_meta`, and regenerate the index.

    `seed_range`: the protocol range the figures' seeds come from (collect, tune, report; "none" for
    figures without seeds, e.g. timings). `key_figures`: the keys the index shows first. `held_out`: for a
    figure without seeds, what it was measured on that no choice was made on (empty: not held out).
    `code_commit`: the commit the measured code was at, when it is not this tree's (a copy run elsewhere)."""
    from vla.protocol import NAMES

    if seed_range not in (*NAMES, "none"):
        raise ValueError(f"seed_range must be one of {', '.join(NAMES)} or none, got '{seed_range}'")
    path = results / f"{name}.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: holds a {type(data).__name__}, not an object of figures")
    data.update(figures)
    meta = {"command": command or command_line(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "commit": code_commit or commit(), "seed_range": seed_range}
    if held_out:
        meta["held_out"] = held_out
    if key_figures:
        missing = [k for k in key_figures if k not in data]
        if missing:
            raise KeyError(f"{path}: key figure '{missing[0]}' is not among the figures")
        meta["key_figures"] = list(key_figures)
    data[META] = meta
    path.write_text(json.dumps(data, indent=1) + "\n")
    if index:
        write_index(results)
    return path


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return f"[{_fmt(value[0])}, {_fmt(value[1])}]"
    if isinstance(value, dict) and {"mean", "lo", "hi"} <= set(value):
        return f"{_fmt(value['mean'])} [{_fmt(value['lo'])}, {_fmt(value['hi'])}]"
    return json.dumps(value) if not isinstance(value, str) else value


def key_figures(data: dict[str, Any]) -> list[tuple[str, Any]]:
    """What a line of the index shows: the file's named key figures, else its first scalar figures."""
    meta = data.get(META, {})
    named = meta.get("key_figures")
    if named:
        return [(k, data[k]) for k in named if k in data]
    out = []
    for k, v in data.items():
        scalar = isinstance(v, (int, float)) and not isinstance(v, bool)
        interval = isinstance(v, dict) and {"mean", "lo", "hi"} <= set(v)
        if k != META and (scalar or interval):
            out.append((k, v))
        if len(out) == FIGURES_SHOWN:
            break
    return out


def index_text(results: Path = RESULTS) -> str:
    lines = ["# Results index",
             "",
             "Generated by `python benchmarks/results_io.py` from the `*.json` files beside it: do not edit by hand.",
             "One line per results file: its key figures, the protocol range its seeds come from (vla.protocol:",
             "only `report` figures are held out), the command that wrote it, the date and the commit. A file",
             "written before the results carried `_meta` says `not recorded`; its page (`<name>.md`) has the",
             "command.",
             "",
             "| result | key figures | seeds | command | date | commit |",
             "|---|---|---|---|---|---|"]
    for path in sorted(results.glob("*.json")):
        if path.name == PROTOCOL.name:  # an index itself, generated from the others
            continue
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(data, dict):
            data = {}
        meta = data.get(META, {})
        figs = "; ".join(f"{k} {_fmt(v)}" for k, v in key_figures(data)) or "(see the page)"
        page = path.with_suffix(".md")
        name = f"[{path.stem}]({page.name})" if page.exists() else path.stem
        cmd = f"`{meta['command']}`" if "command" in meta else "not recorded"
        cells = [name, figs.replace("|", "/"), meta.get("seed_range", "not recorded"), cmd.replace("|", "\\|"),
                 meta.get("date", "not recorded"), meta.get("commit", "not recorded")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## The scripts", "",
              f"Every script in `{results.parent.name}/` (one-off investigations are in `experiments/`), its purpose",
              "and the results that name it (in their recorded command or their page).", "",
              "| script | what it measures | results |", "|---|---|---|"]
    pages = {p.stem: p.read_text(errors="replace") for p in sorted(results.glob("*.md")) if p.name != INDEX.name}
    metas = {p.stem: json.dumps(json.loads(p.read_text()).get(META, {})) for p in sorted(results.glob("*.json"))
             if p.name != PROTOCOL.name and isinstance(json.loads(p.read_text()), dict)}
    for script in sorted([*results.parent.glob("*.py"), *results.parent.glob("*.sh")]):
        named = sorted({stem for stem, text in [*pages.items(), *metas.items()] if script.name in text})
        links = ", ".join(f"[{s}]({s}.md)" if s in pages else s for s in named) or "-"
        lines.append(f"| `{script.name}` | {script_purpose(script).replace('|', '/')} | {links} |")
    return "\n".join(lines) + "\n"


def script_purpose(script: Path) -> str:
    """The first sentence of a script's docstring (a shell script's first comment line after the shebang)."""
    text = script.read_text(errors="replace")
    if script.suffix == ".py":
        import ast

        doc = ast.get_docstring(ast.parse(text)) or ""
    else:
        comments = [ln.lstrip("# ").rstrip() for ln in text.splitlines()[1:] if ln.startswith("#")]
        doc = " ".join(comments[:3])
    first = " ".join(doc.split("\n\n")[0].split())
    end = first.find(". ")
    return (first[:end + 1] if 0 < end < 240 else first[:240]) or "(no docstring)"


def _dotted(data: Any, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def protocol_figures(results: Path = RESULTS) -> dict[str, Any]:
    """protocol.json: every headline figure with the protocol range its seeds came from."""
    figures = []
    for name, file, key in HEADLINES:
        path = results / file
        data = json.loads(path.read_text()) if path.exists() else {}
        value = _dotted(data, key)
        meta = data.get(META, {})
        seed_range = meta.get("seed_range", "not recorded") if value is not None else "missing"
        entry = {"name": name, "file": file, "key": key, "value": value, "range": seed_range,
                 "held_out": seed_range == "report" or (seed_range == "none" and bool(meta.get("held_out")))}
        if meta.get("held_out"):
            entry["held_out_because"] = meta["held_out"]
        figures.append(entry)
    return {"figures": figures, "held_out": sum(f["held_out"] for f in figures),
            "not_held_out": [f["name"] for f in figures if not f["held_out"]]}


def write_index(results: Path = RESULTS) -> Path:
    path = results / INDEX.name
    path.write_text(index_text(results))
    (results / PROTOCOL.name).write_text(json.dumps(protocol_figures(results), indent=1) + "\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 when the index is out of date")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()
    want = {args.results / INDEX.name: index_text(args.results),
            args.results / PROTOCOL.name: json.dumps(protocol_figures(args.results), indent=1) + "\n"}
    if args.check:
        stale = [p for p, text in want.items() if not p.exists() or p.read_text() != text]
        if stale:
            print(f"{stale[0]} is out of date: run python benchmarks/results_io.py", file=sys.stderr)
            sys.exit(1)
        return
    for path, text in want.items():
        path.write_text(text)
        print(f"wrote {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
