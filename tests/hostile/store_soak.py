"""Hostile-input soak for the data / checkpoint / config area.

Draws many more cases than the CI suite (tests/hostile/) with the same generators and verdicts,
then SIGKILLs `EpisodeStore.create` (fresh and overwrite) and writers raced by
create(overwrite=True). Writes benchmarks/results/hardening_store.json (through results_io.write_result)
and .md; `--out DIR` writes both there instead (a smoke run:
`--store-cases 9 --other-cases 2 --checkpoint-cases 9 --export-cases 4 --refine-cases 3 --create-kills 2
--writer-kills 1 --out /tmp/h`).

    nice -n 10 .venv/bin/python -m tests.hostile.store_soak [--store-cases 360] [--create-kills 40]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.results_io import RESULTS, write_result
from tests.hostile.cases import (
    CHECKPOINT_DAMAGE,
    EXPORT_DAMAGE,
    STORE_DAMAGE,
    NotApplicable,
    Verdict,
    bad_override,
    bad_preset,
    build_store,
    check_export,
    damage_checkpoint,
    damage_export,
    damage_store,
    fresh_copy,
    judge,
    load_checkpoint_all,
    malformed_episode,
    mismatched_demos,
    read_all,
    refine_check,
    verify_store,
)
from tests.vla.data.test_store_create_kill import CHILD, create_seconds, kill_create, openable_or_replaceable
from tests.vla.data.test_store_kill import WRITER
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode

ROOT = Path(__file__).resolve().parents[2]



def hostile_cases(work: Path, args: argparse.Namespace) -> list[Verdict]:
    import dataclasses

    import torch

    from tests.vla.policy.conftest import small_config
    from tests.vla.policy.synthetic_data import LineDataset
    from vla.config import load_config
    from vla.job import JobConfig
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.model import VLAModel

    rng = random.Random(args.seed)
    verdicts: list[Verdict] = []
    template = build_store(work / "template.zarr")
    reference, verified = read_all(template), verify_store(template)
    for i in range(args.store_cases):
        path = fresh_copy(template, work / "case.zarr")
        kind = STORE_DAMAGE[i % len(STORE_DAMAGE)]
        case, needles = damage_store(path, kind, random.Random(rng.getrandbits(32)))
        if kind == "swap":  # `vla data verify` must name it as well as every read
            verdicts.append(judge(f"store {case} (verify)", lambda p=path: verify_store(p), verified, needles))
        verdicts.append(judge(f"store {case}", lambda p=path: read_all(p), reference, needles))
    for _ in range(args.other_cases):
        path = fresh_copy(template, work / "case.zarr")
        case, episode, needles = malformed_episode(random.Random(rng.getrandbits(32)))
        with EpisodeStore.open(path, mode="a") as store:
            v = judge(f"episode {case}", lambda s=store, e=episode: s.append_episode(e), None, needles)
        if EpisodeStore.open(path).n_episodes != 4:  # a rejected episode must leave nothing behind
            v = Verdict("silent", v.case, "committed")
        verdicts.append(v)
    fields = [f"demos.{f.name}" for f in dataclasses.fields(JobConfig().demos) if f.type in ("int", "float", "bool")]
    never = object()
    for _ in range(args.other_cases):
        override, needles = bad_override(random.Random(rng.getrandbits(32)), fields)
        verdicts.append(judge(f"override {override}", lambda o=override: load_config(JobConfig, "job", "debug", [o]),
                              never, needles))
        preset, needles = bad_preset(random.Random(rng.getrandbits(32)), work, fields)
        verdicts.append(judge(f"preset {preset.read_text()[:30]!r}",
                              lambda p=preset: load_config(JobConfig, "job", str(p)), never, needles))
    data = LineDataset(n=8, cameras=("agentview",), instructions=("follow the line",))
    torch.manual_seed(0)
    model = VLAModel(small_config(("agentview",)), data.stats())
    model.language.encode(["follow the line"])
    ema = {k: v + 0.5 if v.is_floating_point() and "normalizer" not in k else v for k, v in model.state_dict().items()}
    ckpt = save_checkpoint(work / "ckpt", model, data.stats(), ema_state=ema)
    ckpt_reference = load_checkpoint_all(ckpt)
    for i in range(args.checkpoint_cases):
        path = fresh_copy(ckpt, work / "ckpt_case")
        kind = CHECKPOINT_DAMAGE[i % len(CHECKPOINT_DAMAGE)]
        try:
            case, needles = damage_checkpoint(path, kind, random.Random(rng.getrandbits(32)))
        except NotApplicable:  # this checkpoint has instructions.safetensors: not expected
            continue
        verdicts.append(judge(f"checkpoint {case}", lambda p=path: load_checkpoint_all(p), ckpt_reference, needles))
    if args.export_cases:
        from vla.policy.export import export_onnx

        export = export_onnx(ckpt, work / "onnx")
        export_reference = check_export(export)
        for i in range(args.export_cases):
            path = fresh_copy(export, work / "onnx_case")
            kind = EXPORT_DAMAGE[i % len(EXPORT_DAMAGE)]
            case, needles = damage_export(path, kind, random.Random(rng.getrandbits(32)))
            verdicts.append(judge(f"export {case}", lambda p=path: check_export(p), export_reference, needles))
    from vla.policy.checkpoint import load_config as checkpoint_config

    policy = checkpoint_config(ckpt)
    (work / "refine").mkdir()
    for _ in range(args.refine_cases):
        case, demos, needles = mismatched_demos(work / "refine", policy, random.Random(rng.getrandbits(32)))
        out = work / "refine" / "run"
        v = judge(case, refine_check(ckpt, demos, out), never, needles)
        if out.exists():  # the check comes before any work: the run folder must not be made
            v = Verdict("silent", v.case, f"run folder made: {v.message}")
        verdicts.append(v)
        shutil.rmtree(demos)
    return verdicts


def create_kills(work: Path, kills: int, seed: int) -> dict[str, int]:
    schema = default_schema(image_size=16)
    rng, seconds, path = random.Random(seed), create_seconds(work), work / "store.zarr"
    failures, outcomes = 0, Counter[str]()
    for k in range(kills):
        overwrite = k % 2 == 1
        if overwrite:
            with EpisodeStore.create(path, schema, overwrite=True, image_chunk=8, lowdim_chunk=64) as s:
                for ep in range(3):
                    s.append_episode(synthetic_episode(schema, ep))
        elif path.exists():
            shutil.rmtree(path)
        kill_create(path, overwrite, rng.uniform(0.0, 2.0 * seconds))
        try:
            outcomes[openable_or_replaceable(path)] += 1
            n = EpisodeStore.open(path).n_episodes
            failures += n not in (0, 3 if overwrite else 0)
        except Exception as e:  # counted: the path was neither openable nor replaceable
            print(f"create kill {k}: {type(e).__name__}: {e}", file=sys.stderr)
            failures += 1
    return {"kills": kills, "unopenable": failures, **{f"outcome_{k}": v for k, v in outcomes.items()}}


def writer_kills(work: Path, kills: int, seed: int) -> dict[str, int]:
    """A writer appends while another process keeps trying create(overwrite=True); SIGKILL the
    writer at a random moment; every episode committed before must still be there, value for value."""
    rng, schema, path = random.Random(seed), default_schema(image_size=32), work / "raced.zarr"
    EpisodeStore.create(path, schema, image_chunk=8, lowdim_chunk=64).close()
    lost = overwrites = 0
    reference: dict[int, bytes] = {}
    for _ in range(kills):
        writer = subprocess.Popen([sys.executable, str(WRITER), str(path)], stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None and writer.stdout.readline().startswith("READY")
        # Overwrites race the live writer (every one must be refused), then the writer is killed
        # at a random moment of an append (after the racer: a dead writer's store may be replaced).
        racer = subprocess.run([sys.executable, str(CHILD), "race", str(path), "1.0"], capture_output=True,
                               text=True, timeout=120)
        overwrites += int(racer.stdout.split()[1]) if racer.stdout.startswith("DONE") else 1
        writer.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        store = EpisodeStore.open(path)
        for i, digest in reference.items():  # episodes committed in earlier rounds
            if i >= store.n_episodes or store.episode(i).steps["action"].tobytes() != digest:
                lost += 1
        for i in range(len(reference), store.n_episodes):
            reference[i] = store.episode(i).steps["action"].tobytes()
    return {"kills": kills, "committed_lost": lost, "overwrites_won_against_live_writer": overwrites,
            "episodes": len(reference)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store-cases", type=int, default=40 * len(STORE_DAMAGE))
    parser.add_argument("--other-cases", type=int, default=60, help="episodes, overrides and presets")
    parser.add_argument("--checkpoint-cases", type=int, default=12 * len(CHECKPOINT_DAMAGE))
    parser.add_argument("--export-cases", type=int, default=10 * len(EXPORT_DAMAGE), help="ONNX export folders")
    parser.add_argument("--refine-cases", type=int, default=24, help="vla refine demos that do not fit the policy")
    parser.add_argument("--create-kills", type=int, default=40)
    parser.add_argument("--writer-kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hardening_") as tmp:
        verdicts = hostile_cases(Path(tmp), args)
        (Path(tmp) / "kills").mkdir()
        creates = create_kills(Path(tmp) / "kills", args.create_kills, args.seed)
        writers = writer_kills(Path(tmp), args.writer_kills, args.seed)
    kinds = Counter(v.kind for v in verdicts)
    bad = [v for v in verdicts if v.kind not in ("clear", "harmless")]
    result = {"hostile_cases": len({v.case for v in verdicts}), "cases_run": len(verdicts),
              "clear_errors": kinds["clear"], "harmless": kinds["harmless"], "unnamed": kinds["unnamed"],
              "tracebacks": kinds["traceback"], "silent": kinds["silent"],
              "store_kills": creates["kills"] + writers["kills"], "create_kills": creates,
              "writer_kills_raced_by_overwrite": writers, "committed_lost": writers["committed_lost"],
              "unopenable_after_create_kill": creates["unopenable"],
              "by_area": {area: dict(Counter(v.kind for v in verdicts if v.case.startswith(f"{area} ")))
                          for area in AREAS},
              "distinct_by_area": {area: len({v.case for v in verdicts if v.case.startswith(f"{area} ")})
                                   for area in AREAS},
              "failures": [v.__dict__ for v in bad[:20]], "seconds": round(time.perf_counter() - t0, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    write_result("hardening_store", result, seed_range="none", results=args.out,
                 held_out="hostile inputs generated from fixed seeds; nothing was tuned on them",
                 key_figures=["hostile_cases", "tracebacks", "silent", "committed_lost"],
                 index=args.out.resolve() == RESULTS.resolve())
    (args.out / "hardening_store.md").write_text(report(result))
    print(json.dumps({k: v for k, v in result.items() if k not in ("failures", "by_area")}, indent=1))


WON = "overwrites_won_against_live_writer"
AREAS = ("store", "episode", "override", "preset", "checkpoint", "export", "refine")


def report(r: dict) -> str:
    return f"""# Hardening: stores, checkpoints, configs

Command: `nice -n 10 .venv/bin/python -m tests.hostile.store_soak` ({r['seconds']} s on the 2-core machine).

| figure | value |
|---|---|
| distinct hostile cases | {r['hostile_cases']} ({r['cases_run']} run) |
| clear errors (one line, naming the key / file) | {r['clear_errors']} |
| harmless (no error, exactly the undamaged result) | {r['harmless']} |
| errors not naming the thing | {r['unnamed']} |
| tracebacks | {r['tracebacks']} |
| silent wrong data | {r['silent']} |
| SIGKILLs (inside create + writers raced by overwrite) | {r['store_kills']} |
| paths neither openable nor replaceable after a create kill | {r['unopenable_after_create_kill']} |
| committed episodes lost or changed | {r['committed_lost']} |
| overwrites that won against a live writer | {r['writer_kills_raced_by_overwrite'][WON]} |

Per area: {json.dumps(r['by_area'])}

Distinct cases per area: {json.dumps(r['distinct_by_area'])}

"Harmless" cases are damage to bytes nothing reads (for example a flipped bit in a codec's
compression level, or the statistics cache, which is recomputed from verified chunks). Damage
generated: flipped bytes, truncated, deleted and garbage files anywhere in the store (chunks,
array metadata, the commit record, the stats cache), edited array shapes, edited commit records
(with and without a recomputed record checksum), per-episode metadata rewritten through zarr
with valid chunk checksums, two chunk files swapped (of one array, or of two arrays of one layout:
each passes its own checksum; judged by `vla data verify` and by the reads); malformed episodes;
malformed `key=value` overrides and preset files; flipped / truncated / deleted / garbage checkpoint
files and edited policy configs, and (manifest resealed, so only the value is wrong) NaN / inf in a
weight of model.safetensors or ema.safetensors, in stats.json or in the instruction embeddings, and
absurd sizes in config.json; ONNX export folders with a truncated or garbage graph or external
weights, a broken runtime.json or a NaN / inf action scale or centre, judged by the check `vla eval`
runs in its parent; `vla refine` demos of another action or state size or without a camera the
policy reads, judged by the check the run makes before any work.
"""


if __name__ == "__main__":
    main()
