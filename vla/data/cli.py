"""`vla data ...`: inspect stores, statistics, synthetic data, LeRobot v3 export and import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from vla.data.store import EpisodeStore

data_app = typer.Typer(help="EpisodeStore tools: info, stats, synthetic data, LeRobot v3 interop.",
                       no_args_is_help=True)


@data_app.command("info")
def info(path: Path) -> None:
    """Episodes per task and source, steps, interventions, size on disk, integrity."""
    from vla.data.store import EpisodeStore

    store = EpisodeStore.open(path)
    t = store.table()
    table = Table(title=f"{path}: {store.n_episodes} episodes, {store.n_steps} steps, "
                        f"{store.nbytes_on_disk() / 1e6:.1f} MB")
    for col in ("task", "source", "episodes", "steps", "success", "with interventions"):
        table.add_column(col)
    for task in sorted(set(t.task)):
        for source in sorted(set(t.source[t.task == task])):
            sel = (t.task == task) & (t.source == source)
            table.add_row(task, source, str(sel.sum()), str(t.lengths[sel].sum()),
                          f"{t.success[sel].mean():.0%}", str((t.n_intervention_steps[sel] > 0).sum()))
    Console().print(table)
    typer.echo(f"integrity: {_integrity_line(store)}")
    typer.echo(json.dumps({"schema": store.schema.to_json()}))


def _integrity_line(store: EpisodeStore) -> str:
    if store.integrity and store.chunk_positions_recorded:
        return ("crc32c chunk checksums bound to their positions, every committed chunk written "
                "(`vla data verify` checks them all)")
    if store.integrity:
        # written before position records: a swapped chunk file passes until the next append records them
        return ("crc32c chunk checksums, every committed chunk written (`vla data verify` checks them all); "
                "chunk positions not recorded yet (the next append records them)")
    return ("none: written before chunk checksums; opened for compatibility, chunks are read unverified "
            "(a damaged chunk may read as wrong values)")


@data_app.command("verify")
def verify(path: Path) -> None:
    """Check every committed chunk's stored bytes (present, crc32c) and the episode metadata."""
    from vla.data.store import EpisodeStore

    store = EpisodeStore.open(path)
    store.table()
    n = store.verify()
    if not store.integrity:
        typer.echo(f"{path}: {store.n_episodes} episodes; {_integrity_line(store)}")
        return
    typer.echo(f"{path}: {store.n_episodes} episodes, {n} chunk files verified, no damage found")


@data_app.command("stats")
def stats(path: Path,
          key: list[str] = typer.Option(None, help="keys (default: state, action, reward, images)")) -> None:
    """Normalisation statistics (incremental; cached in the store). Near-constant state features (a table
    height, a joint the expert never moved) are named on stderr: a policy floors their scale."""
    from vla.data.stats import STATE_SCALE_FLOOR, describe_near_constant
    from vla.data.store import EpisodeStore

    store = EpisodeStore.open(path)
    result = store.stats(keys=key or None)
    typer.echo(json.dumps({k: v.to_json() for k, v in result.items()}, indent=1))
    if "state" in result:
        line = describe_near_constant("state", result["state"], STATE_SCALE_FLOOR)
        if line:
            typer.echo(line + " (policy.state_floor; the default)", err=True)


@data_app.command("synth")
def synth(path: Path, episodes: int = 20, image_size: int = 84, overwrite: bool = False) -> None:
    """Write deterministic synthetic episodes (for trying the tools without a simulator)."""
    from vla.data.store import EpisodeStore
    from vla.data.synthetic import default_schema, synthetic_episode
    from vla.progress import progress as tqdm

    store = EpisodeStore.create(path, default_schema(image_size=image_size), overwrite=overwrite)
    for seed in tqdm(range(episodes), desc="synthetic episodes"):
        store.append_episode(synthetic_episode(store.schema, seed))
    typer.echo(f"{path}: {store.n_episodes} episodes, {store.n_steps} steps")


@data_app.command("export-lerobot")
def export_lerobot(store_path: Path, out_dir: Path) -> None:
    """Export a store as a LeRobot v3.0 dataset (parquet + mp4)."""
    from vla.data.lerobot import export_lerobot as export
    from vla.data.store import EpisodeStore

    export(EpisodeStore.open(store_path), out_dir)
    typer.echo(f"wrote {out_dir}")


@data_app.command("import-lerobot")
def import_lerobot(in_dir: Path, store_path: Path) -> None:
    """Import a LeRobot v3.0 dataset into a new store."""
    from vla.data.lerobot import import_lerobot as do_import

    store = do_import(in_dir, store_path)
    typer.echo(f"{store_path}: {store.n_episodes} episodes, {store.n_steps} steps")


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
