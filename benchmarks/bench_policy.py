"""Policy benchmark: chunk latency p50/p99 (torch eager, torch.compile, ONNX Runtime), trainable
parameters, peak memory and training samples/s, per preset.

    python benchmarks/bench_policy.py --presets tiny --backends eager,compile,onnx --out result.json
    python benchmarks/bench_policy.py --presets tiny --backends eager,onnx \
        --variant lite0=vision_backbone=efficientnet_lite0      # one more row per preset with these overrides

Each (preset, backend) runs in its own subprocess so peak memory (ru_maxrss; on CUDA
max_memory_allocated) is not polluted by the previous run. Inputs: batch 1, the cameras of
`--cameras` at `--image` px (robosuite's 84x84 default; the model resizes to its image_size),
a 9-D state, 7-D actions, a cached instruction embedding. Latency covers one `sample_chunk`
(observation checks, encoder, K = 10 Euler steps). Timings on a shared CPU are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _observations(cameras: list[str], image: int, batch: int) -> list[dict]:
    rng = np.random.default_rng(0)
    return [{"images": {c: rng.integers(0, 256, (image, image, 3), dtype=np.uint8) for c in cameras},
             "state": rng.standard_normal(9).astype(np.float32), "instruction": "lift the cube",
             "timestamp": 0.0} for _ in range(batch)]


def _stats(cameras: list[str]) -> dict:
    from vla.data.stats import Stats

    def s(dim: int, mean: float, std: float) -> Stats:
        return Stats(mean=np.full(dim, mean), std=np.full(dim, std), min=np.full(dim, -1.0),
                     max=np.full(dim, 1.0), q01=np.full(dim, -1.0), q99=np.full(dim, 1.0), count=1)

    out = {"state": s(9, 0.0, 1.0), "action": s(7, 0.0, 1.0)}
    out.update({f"images/{c}": s(3, 120.0, 60.0) for c in cameras})
    return out


def run_one(preset: str, backend: str, cameras: list[str], image: int, iters: int, device: str,
            train_batch: int, overrides: list[str] | None = None) -> dict:
    import torch

    from vla.policy.model import VLAModel, count_parameters
    from vla.policy.policy import TorchPolicy

    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    torch.manual_seed(0)
    from vla.config import load_config
    from vla.policy.config import PolicyConfig

    cfg = load_config(PolicyConfig, "policy", preset, [f"cameras=[{','.join(cameras)}]", "state_dim=9",
                                                         "action_dim=7", *(overrides or [])])
    model = VLAModel(cfg, _stats(cameras)).to(device).eval()
    obs = _observations(cameras, image, 1)
    label = preset + (f" ({', '.join(overrides)})" if overrides else "")
    result: dict = {"preset": label, "backend": backend, "device": device, "params": count_parameters(model),
                    "cameras": cameras, "image": image, "chunk": cfg.chunk_size, "steps": cfg.num_steps}
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    if backend == "train":
        from vla.train.config import TrainConfig
        from vla.train.trainer import Trainer

        class Synthetic(torch.utils.data.Dataset):
            def __len__(self) -> int:
                return 10_000

            def __getitem__(self, i: int) -> dict:
                g = torch.Generator().manual_seed(i)
                return {"images": {c: torch.randint(0, 256, (cfg.n_obs_steps, image, image, 3), generator=g,
                                                    dtype=torch.uint8) for c in cameras},
                        "state": torch.randn(cfg.n_obs_steps, 9, generator=g),
                        "obs_mask": torch.ones(cfg.n_obs_steps, dtype=torch.bool),
                        "action": torch.randn(cfg.chunk_size, 7, generator=g),
                        "action_mask": torch.ones(cfg.chunk_size, dtype=torch.bool), "instruction": "lift the cube"}

        tc = TrainConfig(steps=iters + 2, batch_size=train_batch, device=device, tensorboard=False,
                         progress=False, ckpt_every=10**9, ema_decay=0.999)
        with tempfile.TemporaryDirectory() as out:
            trainer = Trainer(model, Synthetic(), tc, out, _stats(cameras))
            trainer.fit(steps=2)  # warm-up
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            trainer.fit(steps=iters + 2)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            result["train_samples_per_s"] = iters * train_batch / (time.perf_counter() - t0)
            result["train_batch"] = train_batch
    else:
        if backend == "onnx":
            from vla.policy.export import OnnxPolicy, export_onnx

            tmp = tempfile.mkdtemp()
            model.language.encode(["lift the cube"])
            t0 = time.perf_counter()
            export_onnx(model.cpu(), tmp, camera_sizes={c: (image, image) for c in cameras})
            result["export_s"] = time.perf_counter() - t0
            providers = ["CUDAExecutionProvider"] if device.startswith("cuda") else ["CPUExecutionProvider"]
            policy = OnnxPolicy(tmp, providers=providers, threads=torch.get_num_threads())
            result["providers"] = policy.providers
        else:
            if backend == "compile":
                model.encode = torch.compile(model.encode)  # type: ignore[method-assign]
                model.velocity = torch.compile(model.velocity)  # type: ignore[method-assign]
            policy = TorchPolicy(model)
        t0 = time.perf_counter()
        for _ in range(3):
            policy.sample_chunk(obs)
        result["warmup_s"] = time.perf_counter() - t0
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            policy.sample_chunk(obs)
            if device.startswith("cuda") and backend != "onnx":
                torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1000)
        result.update(latency_ms_p50=float(np.percentile(times, 50)), latency_ms_p99=float(np.percentile(times, 99)),
                      iters=iters)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["baseline_rss_mb"] = base_rss
    if device.startswith("cuda"):
        result["peak_cuda_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--presets", default="tiny")
    ap.add_argument("--backends", default="eager,compile,onnx,train")
    ap.add_argument("--cameras", default="agentview,robot0_eye_in_hand")
    ap.add_argument("--image", type=int, default=84)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--train-batch", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch and ONNX Runtime threads (0: library default; 1 avoids contention on shared CPUs)")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=KEY=VALUE[;KEY=VALUE]: each preset again with these policy overrides")
    ap.add_argument("--out", default="")
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)  # internal: preset:backend[:overrides]
    args = ap.parse_args()
    cameras = [c for c in args.cameras.split(",") if c]
    if args.one:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        preset, backend, *rest = args.one.split(":", 2)
        overrides = [o for o in rest[0].split(";") if o] if rest else []
        print(json.dumps(run_one(preset, backend, cameras, args.image, args.iters, args.device, args.train_batch,
                                 overrides)))
        return
    results = []
    variants = [""] + [v.split("=", 1)[1] for v in args.variant]
    for preset in args.presets.split(","):
        for backend, variant in ((b, v) for v in variants for b in args.backends.split(",")):
            cmd = [sys.executable, __file__, "--one", f"{preset}:{backend}:{variant}", "--cameras", args.cameras,
                   "--image", str(args.image), "--iters", str(args.iters), "--device", args.device,
                   "--train-batch", str(args.train_batch), "--threads", str(args.threads)]
            proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            if proc.returncode != 0:
                results.append({"preset": preset, "backend": backend, "error": proc.stderr.strip()[-2000:]})
            else:
                results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(json.dumps(results[-1]), flush=True)
    if args.out:
        payload = {"machine": os.uname().nodename, "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
                   "command": "python " + " ".join(["benchmarks/bench_policy.py", *sys.argv[1:]]), "results": results}
        out = Path(args.out)
        out.write_text(to_markdown(payload) if out.suffix == ".md" else json.dumps(payload, indent=2))


def to_markdown(payload: dict) -> str:
    """The results file people read: one row per preset and backend, plus the command."""
    lines = ["# Policy latency, memory and training throughput", "",
             f"Command: `{payload['command']}`", "",
             f"Machine: {payload['cpus']} CPUs, load average at the end {payload['load_avg'][0]:.1f} "
             "(a shared machine: latencies vary between runs). Batch 1, two 84x84 cameras, K=10 Euler "
             "steps, H=16.", "",
             "| preset | backend | params (M) | p50 ms | p99 ms | train samples/s | peak RSS MB | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in payload["results"]:
        if "error" in r:
            lines.append(f"| {r['preset']} | {r['backend']} | | | | | | error: {r['error'].splitlines()[-1][:80]} |")
            continue
        params = r.get("params_trainable", r.get("params"))
        lines.append("| {} | {} | {} | {} | {} | {} | {:.0f} | {} |".format(
            r["preset"], r["backend"], f"{params / 1e6:.2f}" if params else "",
            f"{r['latency_ms_p50']:.1f}" if "latency_ms_p50" in r else "",
            f"{r['latency_ms_p99']:.1f}" if "latency_ms_p99" in r else "",
            f"{r['train_samples_per_s']:.3g}" if "train_samples_per_s" in r else "",
            r.get("peak_rss_mb", 0), f"warm-up {r['warmup_s']:.0f} s" if r.get("warmup_s", 0) > 5 else ""))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
