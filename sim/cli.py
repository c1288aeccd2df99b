"""`vla eval` and `vla sim collect|tasks`: evaluation and demo collection in parallel workers."""

from __future__ import annotations

import json

import typer

from vla.config import load_config

sim_app = typer.Typer(help="Simulation: list tasks, collect scripted demos.", no_args_is_help=True)


def _print_summary(summary: dict) -> None:
    lo, hi = summary["wilson95"]
    typer.echo(f"{summary['task']} / {summary['policy']}: success {summary['successes']}/{summary['episodes']} "
               f"= {summary['success_rate']:.0%} (Wilson 95% [{lo:.0%}, {hi:.0%}]), "
               f"mean length {summary['length_mean']:.0f}, seeds of the {summary['seed_range']} range; per sub-task: "
               + json.dumps({k: round(v, 2) for k, v in summary["subtask_success"].items()}))
    out = summary["config"]["out_dir"]
    typer.echo(f"summary: {out}/summary.json, plot: {out}/summary.png")


@sim_app.command("tasks")
def tasks() -> None:
    """List the registered tasks."""
    from vla.registry import TASKS

    typer.echo("\n".join(TASKS.names()))


@sim_app.command("collect")
def collect(store: str = typer.Argument(..., help="EpisodeStore path (created if missing, else appended to)"),
            preset: str = typer.Option("collect", help="preset of configs/eval/ or a YAML path"),
            overrides: list[str] = typer.Argument(None, help="key=value, e.g. task=stack3 episodes=50 skill=0.7"),
            ) -> None:
    """Scripted-expert demos into the EpisodeStore (source=demo), from parallel workers."""
    from sim.evaluate import EvalConfig, run_evaluation

    config = load_config(EvalConfig, "eval", preset, [*(overrides or []), f"record={store}", "policy=expert",
                                                        "source=demo"])
    _print_summary(run_evaluation(config))


def register(app: typer.Typer) -> None:
    app.add_typer(sim_app, name="sim")

    @app.command("eval")
    def evaluate(policy: str = typer.Argument(..., help="checkpoint folder, or zero | random | expert"),
                 preset: str = typer.Option("default", help="preset of configs/eval/ or a YAML path"),
                 overrides: list[str] = typer.Argument(None, help="key=value, e.g. task=lift episodes=50 workers=2"),
                 ) -> None:
        """Evaluate a policy: success rate with a Wilson 95% interval, lengths, sub-tasks, videos, plot."""
        from sim.evaluate import EvalConfig, run_evaluation

        config = load_config(EvalConfig, "eval", preset, [*(overrides or []), f"policy={policy}"])
        if config.perturb_sweep:
            from sim.robustness import run_sweep

            run_sweep(config)
            return
        if config.perturb_ablate:
            from sim.robustness import run_ablation

            run_ablation(config)
            return
        _print_summary(run_evaluation(config))
