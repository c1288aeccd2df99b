"""`vla refine METHOD`: refine a pretrained policy from supervised rollouts (see vla/refine/loop.py)."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("refine", context_settings={"help_option_names": ["-h", "--help"]})
    def refine_cmd(method: str = typer.Argument(..., help="habc | rac | hg-dagger | dagger | sft | filtered-bc | awr | "
                                                          "imagination | reguide-ft | reguide-fs | pa-rl | dsrl"),
                   ckpt: Path = typer.Option(..., help="pretrained checkpoint folder (policy version 0)"),
                   demos: Path = typer.Option(..., help="EpisodeStore of the demonstrations it was trained on"),
                   task: str = typer.Option("pick_place", help="registered sim task"),
                   out: Path = typer.Option(Path("runs/refine"), help="run folder (store, checkpoints, records)"),
                   preset: str = typer.Option("default", help="refine preset (configs/refine/) or YAML path"),
                   resume: bool = typer.Option(False, help="continue an interrupted run in --out"),
                   overrides: list[str] = typer.Argument(None, help="key=value overrides, e.g. iterations=2 "
                                                         "method_args.beta=0.5 train.steps=500 obs_mode=state "
                                                         "cameras=[]"),
                   ) -> None:
        """Evaluate -> collect rollouts with the scripted intervener -> fine-tune, per iteration;
        every iteration writes a checkpoint and an evaluation record (records.json, curves.png)."""
        from vla.config import ConfigError, load_config
        from vla.refine.config import RefineConfig
        from vla.refine.loop import RefineRun

        name = method.replace("-", "_")
        values = {"method": name, "ckpt": str(ckpt), "demos": str(demos), "task": task, "out_dir": str(out)}
        cfg = load_config(RefineConfig, "refine", preset, overrides or [], values=values)
        try:
            cfg.validate()
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if (out / "config.json").exists() and not resume:
            raise ConfigError(f"{out} already holds a refinement run: pass --resume to continue it, "
                              "or choose another --out")
        # Here, before the run copies the demos or starts evaluation workers: a damaged or missing
        # checkpoint is one CheckpointError naming the file, not "evaluation worker 0 failed".
        from vla.policy.checkpoint import validate_checkpoint

        validate_checkpoint(ckpt)
        rows = RefineRun(cfg).run()
        for r in rows:
            lo, hi = r["wilson95"]
            typer.echo(f"version {r['version']}: success {r['successes']}/{r['episodes']} [{lo:.0%}, {hi:.0%}] "
                       f"after {r['env_episodes']} env episodes, {r['intervention_steps']} intervention steps")
        typer.echo(f"records: {out / 'records.json'}  curves: {out / 'curves.png'}")
        typer.echo(json.dumps({"final_policy": RefineRun(cfg).version_policy(cfg.iterations)}))
