"""`vla perception ...`: train and measure the pose estimator."""

from __future__ import annotations

import json
from pathlib import Path

import typer

perception_app = typer.Typer(help="Pose estimator: object poses from camera images (trained on a store's "
                                  "images, labelled by its states).", no_args_is_help=True)


@perception_app.command("train")
def train_cmd(store: Path = typer.Argument(..., help="EpisodeStore collected with obs_mode=state"),
              overrides: list[str] = typer.Argument(None, help="key=value, e.g. steps=4000 out_dir=runs/pose"),
              preset: str = typer.Option("default", help="preset of configs/perception/ or a YAML path")) -> None:
    """Train the pose estimator on a store's frames; writes estimator.safetensors + estimator.json."""
    from vla.config import load_config
    from vla.perception.config import PerceptionConfig
    from vla.perception.train import train

    cfg = load_config(PerceptionConfig, "perception", preset, overrides or [])
    summary = train(store, cfg)
    val = summary["val"] or {}
    line = ", ".join(f"{o} {v['position_mm_median']:.1f} mm" for o, v in val.items() if isinstance(v, dict))
    typer.echo(f"estimator: {cfg.out_dir} ({summary['frames']} frames, {summary['seconds']} s); "
               f"held-out median error: {line or 'no validation episodes'}")


@perception_app.command("eval")
def eval_cmd(estimator: Path = typer.Argument(..., help="folder `vla perception train` wrote"),
             store: Path = typer.Argument(..., help="EpisodeStore (obs_mode=state) of seeds it did not see"),
             every: int = typer.Option(1, help="every this many steps of each episode"),
             out: Path = typer.Option(None, help="write the figures here as JSON")) -> None:
    """Position (mm) and rotation (degrees) errors of the estimator on a store's frames."""
    from vla.perception.train import evaluate

    report = evaluate(estimator, store, every)
    text = json.dumps(report, indent=1)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    typer.echo(text)


def register(app: typer.Typer) -> None:
    app.add_typer(perception_app, name="perception")
