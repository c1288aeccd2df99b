"""The Ray backend of the evaluator (`backend=ray`, `ray_address=HOST:PORT`): the same worker specs
as the local backend, each run as one Ray task on any node of a cluster.

What crosses the process and network boundary is what crosses it locally, as plain values: the
worker spec (a JSON-able dict), the policy folder's files as `{name: bytes}` (so worker nodes need
no shared filesystem for the checkpoint), and per finished episode a dict of the JSON-able result,
the episode's `.npz` bytes (loaded with allow_pickle=False by the parent) and the MP4 bytes. No
object of ours is pickled. Each task is a streaming generator: the parent sees every episode as it
finishes (progress bar) and stays the single writer of the EpisodeStore and the video folder.

Each task calls `sim.eval_worker.run_worker`, the function the local worker process runs, and
every episode reseeds env and policy from its own seed, so the same seeds give the same episodes
on either backend and whichever node runs them. Every node needs the same vla-stack installed
(same Python, same package versions); other paths a policy spec names (e.g. a `wm-select:` world
model) must exist on every node.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sim.worker_io import EpisodeResult
from vla.progress import progress as tqdm

# One thread per task: a task holds one CPU of the cluster's accounting, the same rule as the
# local workers (llvmpipe renders with LP_NUM_THREADS threads).
TASK_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LP_NUM_THREADS": "1"}
# The optimizer state is twice the weights and never read at inference: not worth shipping.
NOT_SHIPPED = {"optimizer.safetensors"}


# Set while a private cluster starts, inherited by its processes (`tools/offhost-traffic` showed
# both leaks with Ray 2.60 and none with these): Ray replaces 127.0.0.1 by the machine's network
# address (and finds that by a UDP connect to 8.8.8.8) unless its "cluster mode" is off; and its
# dashboard process, started even with include_dashboard=False, probes the cloud metadata servers
# (169.254.169.254, metadata.google.internal) whether usage stats are on or not. A proxy on a dead
# loopback port makes that probe fail at once without leaving the machine; no_proxy keeps Ray's
# own gRPC on loopback direct.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
                "http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
                "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}


def _import_ray() -> Any:
    # Ray reports usage statistics by default; nothing of ours leaves the machines it runs on.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as e:
        raise ImportError("backend=ray needs Ray: pip install 'vla-stack[dist]' (or 'ray>=2.9')") from e
    return ray


def start_local_cluster(num_cpus: int | None = None, object_store_memory: int | None = None) -> None:
    """A private one-machine Ray cluster bound to 127.0.0.1: no dashboard, no usage stats, nothing
    sent off the machine (see LOOPBACK_ENV)."""
    saved = {k: os.environ.get(k) for k in LOOPBACK_ENV}
    os.environ.update(LOOPBACK_ENV)
    ray = _import_ray()
    from ray._private import ray_constants

    cluster_mode = getattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    ray_constants.ENABLE_RAY_CLUSTER = False  # read from the environment at import, maybe before ours
    try:
        ray.init(address="local", include_dashboard=False, num_cpus=num_cpus, _node_ip_address="127.0.0.1",
                 object_store_memory=object_store_memory, log_to_driver=False)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster_mode  # a later connection to a real cluster needs it
        for k, v in saved.items():  # this process's own HTTP is none of Ray's business
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def connect(address: str = "", num_cpus: int | None = None) -> None:
    """Join the cluster at `address` ("auto" = the one `ray start` runs on this machine), or, with
    no address, start a private one-machine cluster (`start_local_cluster`). An existing connection
    of this process is reused (tests start their own; a refinement run evaluates many times and
    must not pay a cluster start each time)."""
    ray = _import_ray()
    if ray.is_initialized():
        return
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        start_local_cluster(num_cpus)


def policy_files(spec: str) -> dict[str, bytes] | None:
    """The policy folder's top-level files, when the spec is a folder on this machine (checkpoint or
    ONNX export); None for built-ins and other specs."""
    path = Path(spec)
    if not path.is_dir():
        return None
    return {f.name: f.read_bytes() for f in sorted(path.iterdir()) if f.is_file() and f.name not in NOT_SHIPPED}


def episode_task(spec: dict[str, Any], files: dict[str, bytes] | None) -> Iterator[dict[str, Any]]:
    """Runs inside a Ray task: the spec's episodes, each yielded as plain values (see the module doc).
    Files go to a private temporary folder on the worker's node and are read back as bytes."""
    from sim.eval_worker import run_worker

    with tempfile.TemporaryDirectory(prefix="vla_ray_") as tmp:
        spec = dict(spec)
        if files is not None:
            folder = Path(tmp) / "policy"
            folder.mkdir()
            for name, data in files.items():
                (folder / Path(name).name).write_bytes(data)  # .name: a name never escapes the folder
            spec["policy"] = str(folder)
        record = bool(spec["episode_dir"])
        spec["episode_dir"] = str(Path(tmp) / "episodes") if record else ""
        spec["video_dir"] = str(Path(tmp) / "videos")
        for result in run_worker(spec):
            item: dict[str, Any] = {"result": dict(result.__dict__)}
            if record:
                npz = Path(spec["episode_dir"]) / f"{result.seed}.npz"
                meta = npz.with_suffix(".json")
                item["npz"], item["meta"] = npz.read_bytes(), meta.read_text()
                npz.unlink()
                meta.unlink()
            if result.video:
                video = Path(result.video)
                item["video_name"], item["video"] = video.name, video.read_bytes()
                video.unlink()
            yield item


def run_specs(specs: list[dict[str, Any]], address: str, episode_dir: Path | None, video_dir: Path,
              total: int, progress: bool, desc: str) -> list[EpisodeResult]:
    """Run each worker spec as one Ray task (one CPU each); recorded episodes land in `episode_dir`
    as the local workers leave them, videos in `video_dir`. A failing task raises here with the
    worker's traceback."""
    connect(address, num_cpus=len(specs))
    ray = _import_ray()

    files = policy_files(specs[0]["policy"])
    files_ref = ray.put(files)  # once, not once per task
    task = ray.remote(episode_task).options(num_cpus=1, num_returns="streaming", runtime_env={"env_vars": TASK_ENV},
                                            # a retried task would replay the episodes it already
                                            # yielded; a failure is reported, as with local workers
                                            max_retries=0)
    generators = [task.remote(spec, files_ref) for spec in specs]
    results: list[EpisodeResult] = []
    bar = tqdm(total=total, desc=desc, disable=not progress)
    pending = list(generators)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for gen in ready:
                try:
                    ref = next(gen)
                except StopIteration:
                    continue
                try:
                    item = ray.get(ref)
                except ray.exceptions.RayTaskError as e:  # the worker's own traceback, as from a local worker
                    raise RuntimeError(f"evaluation worker {generators.index(gen)} failed on Ray:\n"
                                       f"{str(e)[-3000:]}") from None
                pending.append(gen)
                results.append(_store_item(item, episode_dir, video_dir))
                bar.update(1)
    finally:
        bar.close()
        for gen in pending:  # an error above: stop the other tasks too
            ray.cancel(gen, force=True)
    if len(results) != total:
        raise RuntimeError(f"expected {total} episode results, got {len(results)}")
    return results


def _store_item(item: dict[str, Any], episode_dir: Path | None, video_dir: Path) -> EpisodeResult:
    result = EpisodeResult.from_dict(item["result"])
    if episode_dir is not None:
        episode_dir.mkdir(parents=True, exist_ok=True)
        (episode_dir / f"{result.seed}.npz").write_bytes(item["npz"])
        (episode_dir / f"{result.seed}.json").write_text(item["meta"])
    if "video" in item:
        video_dir.mkdir(parents=True, exist_ok=True)
        path = video_dir / Path(item["video_name"]).name
        path.write_bytes(item["video"])
        result.video = str(path)
    return result

