"""The one `vla` command. Subcommands live next to what they drive; packages above vla/ (sim/, real/,
worldmodel/) contribute theirs and their config kinds through the `vla.plugins` entry point
(vla/plugins.py), so vla/ never names them."""

from __future__ import annotations

import importlib
import os
import sys

import typer

from vla.config import ConfigError, preset_names

# Quiet, offline defaults for every subcommand: nothing downloads weights at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

app = typer.Typer(help="VLA stack: collect demos, pretrain, refine, evaluate, export, deploy.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
config_app = typer.Typer(help="Inspect config presets.", no_args_is_help=True)
app.add_typer(config_app, name="config")

# vla/'s modules that define `register(app)` to add their subcommands (the plugins add theirs)
CLI_MODULES = ("vla.data.cli", "vla.job", "vla.perception.cli", "vla.policy.cli", "vla.train.cli", "vla.refine.cli")
CONFIG_KINDS = {"job": "vla.job:JobConfig", "perception": "vla.perception.config:PerceptionConfig",
                "refine": "vla.refine.config:RefineConfig"}


def config_kinds() -> dict[str, str]:
    from vla.plugins import provided_configs

    return {**CONFIG_KINDS, **provided_configs()}


@config_app.command("list")
def config_list() -> None:
    """List the presets of every config kind."""
    from vla.config import CONFIG_DIR

    for kind_dir in sorted(p for p in CONFIG_DIR.iterdir() if p.is_dir()):
        typer.echo(f"{kind_dir.name}: {', '.join(preset_names(kind_dir.name))}")


@config_app.command("show")
def config_show(kind: str = typer.Argument(..., help="config kind, e.g. job"),
                preset: str = typer.Argument("default", help="preset name or YAML path"),
                overrides: list[str] = typer.Argument(None, help="key=value overrides")) -> None:
    """Print the resolved config (defaults <- preset <- overrides)."""
    from vla.config import load_config, to_yaml
    from vla.data.schema import closest

    kinds = config_kinds()
    if kind not in kinds:
        raise ConfigError(f"unknown config kind '{kind}'" + closest(kind, sorted(kinds)))
    module, name = kinds[kind].split(":")
    cls = getattr(importlib.import_module(module), name)
    typer.echo(to_yaml(load_config(cls, kind, preset, overrides or [])))


def _register_plugins() -> None:
    from vla.plugins import provided

    for module_name in (*CLI_MODULES, *provided("cli")):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            # Only a missing plugin module itself is skipped; a broken import inside it is an error.
            if e.name is not None and module_name.startswith(e.name):
                continue
            raise
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register_plugins()


# Expected errors: one line `error: ...` and exit code 2 (a traceback only with --debug or
# VLA_DEBUG=1). Classes of modules that may not be imported yet are looked up in sys.modules when
# an error happens, so the CLI does not import torch or zarr just to name them.
EXPECTED_ERRORS: tuple[type[BaseException], ...] = (ConfigError, KeyError, ValueError, FileNotFoundError,
                                                   PermissionError, IsADirectoryError, NotADirectoryError,
                                                   FileExistsError)
LAZY_EXPECTED_ERRORS = (("vla.data.store_files", "StoreError"), ("vla.policy.checkpoint", "CheckpointError"),
                        ("yaml", "YAMLError"), ("safetensors", "SafetensorError"))


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="show full tracebacks of errors"),
             verbose: bool = typer.Option(False, "--verbose", help="let third-party warnings through (robosuite's "
                                          "macro-file and optional-extra lines, library deprecations)")) -> None:
    if debug:
        os.environ["VLA_DEBUG"] = "1"
    if verbose:
        os.environ["VLA_VERBOSE"] = "1"


def _expected(e: BaseException) -> bool:
    lazy = tuple(getattr(sys.modules[m], name) for m, name in LAZY_EXPECTED_ERRORS if m in sys.modules)
    return isinstance(e, EXPECTED_ERRORS + lazy)


def error_line(e: BaseException) -> str:
    """One line for an expected error; YAML syntax errors name the file, line and column."""
    mark = getattr(e, "problem_mark", None)
    if mark is not None:
        name = mark.name if not str(mark.name).startswith("<") else "a key=value override"
        problem = " ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x)
        return f"{name}: line {mark.line + 1}, column {mark.column + 1}: YAML syntax error: {problem}"
    message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
    lines = [line.strip() for line in str(message).strip().splitlines() if line.strip()]
    return " ".join(lines) if lines else type(e).__name__


def main() -> None:
    for flag, var in (("--debug", "VLA_DEBUG"), ("--verbose", "VLA_VERBOSE")):
        if flag in sys.argv[1:]:  # accepted anywhere on the line, not only before the subcommand
            sys.argv.remove(flag)
            os.environ[var] = "1"
    try:
        app()
    except Exception as e:
        if not _expected(e) or os.environ.get("VLA_DEBUG", "") not in ("", "0"):
            raise
        typer.secho(f"error: {error_line(e)}", fg=typer.colors.RED, err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
