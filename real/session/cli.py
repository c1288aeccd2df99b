"""`vla session`: the command line over `run_session` (added through real/plugin.py, an entry point)."""

from __future__ import annotations

from typing import Any

SESSION_HELP = (
    "Correction session: supervise the policy in sim, take over, rewind (RaC), hand back (HG-DAgger); "
    "episodes go to the EpisodeStore with is_intervention / is_recovery flags.\n\n"
    "Keyboard (in the terminal): space take over / hand back, W/S A/D R/F translate x y z, arrows pitch / yaw, "
    "Z/C roll, G gripper, B rewind, Enter success, X failure, Q quit (Ctrl-C too: the episode in progress is "
    "dropped, stored ones are kept).")


def register(app: Any) -> None:
    import typer

    from vla.config import load_config

    @app.command("session", help=SESSION_HELP)
    def session(ckpt: str = typer.Option(None, help="policy: checkpoint folder or ONNX export folder"),
                task: str = typer.Option(None, help="task name (see `vla sim tasks`)"),
                device: str = typer.Option(None, help="keyboard | gamepad | spacemouse | scripted"),
                store: str = typer.Option(None, help="EpisodeStore to append to (created if missing)"),
                episodes: int = typer.Option(None, help="episodes to record (seeds continue the store's)"),
                mode: str = typer.Option(None, help="rac (episode ends after the intervention) | hg_dagger"),
                preset: str = typer.Option("default", help="preset of configs/session/ or a YAML path"),
                overrides: list[str] = typer.Argument(None, help="key=value, e.g. horizon=300 video_dir=runs/v"),
                ) -> None:
        from real.session.runner import SessionConfig, run_session
        from real.teleop import TeleopUnavailable
        from vla.data.store import StoreError

        given = {"ckpt": ckpt, "task": task, "device": device, "store": store, "episodes": episodes, "mode": mode}
        cfg = load_config(SessionConfig, "session", preset, overrides or [],
                          values={k: v for k, v in given.items() if v is not None})
        try:
            result = run_session(cfg)
        except (TeleopUnavailable, StoreError) as e:
            typer.secho(f"error: {e}", fg=typer.colors.RED, err=True)
            raise typer.Exit(2) from None
        n_int = sum(r.source == "intervention" for r in result.episodes)
        typer.echo(f"{len(result.episodes)} episode(s) stored in {cfg.store} ({n_int} with interventions, "
                   f"{sum(r.success for r in result.episodes)} successful)"
                   + (f"; the episode of seed {result.dropped_seed} in progress was dropped"
                      if result.dropped_seed is not None else ""))
        if result.interrupted:
            raise typer.Exit(130)
