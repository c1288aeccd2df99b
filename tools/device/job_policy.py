"""Device job (`JOB=job_policy.py bash tools/device/run.sh`): the GPU tests, then the policy
benchmark on CUDA (chunk latency of tiny/small/large in eager, torch.compile and ONNX Runtime,
training samples/s), the figures `benchmarks/results/policy.md` lacked. Results land in $OUT:
job.log, policy_gpu.json (bench_policy's payload) and tests.log."""
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import OUT, log  # this folder, not a package

PRESETS = os.environ.get("JOB_PRESETS", "tiny,small,large")
BACKENDS = os.environ.get("JOB_BACKENDS", "eager,compile,onnx,train")


def main() -> None:
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        smi = "no nvidia-smi"
    log(f"gpu: {smi}")
    with open(OUT / "tests.log", "w") as f:
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "tests/vla/train/test_trainer_gpu.py"], stdout=f, stderr=subprocess.STDOUT,
                            timeout=240).returncode
    log(f"gpu tests rc={rc}: {(OUT / 'tests.log').read_text().strip().splitlines()[-1]}")
    bench(PRESETS, BACKENDS, 32, "policy_gpu.json", float(os.environ.get("JOB_BENCH_TIMEOUT", 420)))
    # the training rate at the batch a GPU run would use
    bench("tiny,small", "train", 256, "policy_gpu_b256.json", float(os.environ.get("JOB_BENCH_TIMEOUT", 420)) / 2)


def bench(presets: str, backends: str, train_batch: int, out: str, timeout: float) -> None:
    cmd = [sys.executable, "benchmarks/bench_policy.py", "--presets", presets, "--backends", backends,
           "--device", os.environ.get("JOB_DEVICE", "cuda"), "--iters", os.environ.get("JOB_ITERS", "50"),
           "--train-batch", str(train_batch), "--threads", "4", "--out", str(OUT / out)]
    log("bench: " + " ".join(cmd[1:]))
    rc = subprocess.run(cmd, timeout=timeout).returncode
    log(f"bench {out} rc={rc}")


if __name__ == "__main__":
    main()
