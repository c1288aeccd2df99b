"""`vla train` and `vla export`."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train_cmd(store: Path = typer.Argument(..., help="EpisodeStore to train on"),
                  out: Path = typer.Option(Path("runs/train"), help="output folder (checkpoints/, tb/)"),
                  policy: str = typer.Option("tiny", help="policy preset (configs/policy/) or YAML path"),
                  train: str = typer.Option("default", help="train preset (configs/train/) or YAML path"),
                  resume: bool = typer.Option(False, help="continue from the latest checkpoint in --out"),
                  eval_task: str = typer.Option("", help="sim task to evaluate on every train.eval_every steps"),
                  eval_episodes: int = typer.Option(10, help="episodes per periodic evaluation"),
                  overrides: list[str] = typer.Argument(None, help="policy.x=.. train.x=.. data.x=.. overrides"),
                  ) -> None:
        """Pretrain a policy on an EpisodeStore; checkpoints are safetensors folders."""
        from vla.train.pretrain import run_training

        result = run_training(store, out, policy, train, overrides or [], resume=resume, eval_task=eval_task,
                              eval_episodes=eval_episodes)
        for step, scores in result.evals.items():
            typer.echo(f"eval at step {step}: " + ", ".join(f"{k} {v:.3f}" for k, v in scores.items()))
        last = list(result.losses.values())[-1] if result.losses else float("nan")
        typer.echo(f"trained to step {result.steps_done}; last loss {last:.4f}; checkpoint: {result.last_checkpoint}")

    @app.command("export")
    def export_cmd(checkpoint: Path = typer.Argument(..., help="checkpoint folder"),
                   out: Path = typer.Option(None, help="output folder (default: CHECKPOINT/onnx)"),
                   format: str = typer.Option("onnx", help="export format (onnx)"),
                   fp16: bool = typer.Option(False, help="half-precision weights"),
                   image_size: str = typer.Option("", help="HxW of the images the robot sends, e.g. 84x84 "
                                                  "(default: the policy's input size)"),
                   ) -> None:
        """Export a checkpoint for deployment (ONNX: encoder + flow step graphs)."""
        from vla.config import ConfigError
        from vla.policy.export import export_onnx

        if format != "onnx":
            raise ConfigError(f"unknown export format '{format}' (valid: onnx)")
        sizes = None
        if image_size:
            try:
                h, w = (int(v) for v in image_size.lower().split("x"))
            except ValueError:
                raise ConfigError(f"--image-size must look like 84x84, got '{image_size}'") from None
            from vla.policy.checkpoint import load_config as load_policy_config

            sizes = {cam: (h, w) for cam in load_policy_config(checkpoint).cameras}
        target = out or checkpoint / "onnx"
        export_onnx(checkpoint, target, camera_sizes=sizes, fp16=fp16)
        typer.echo(f"wrote {target}")
