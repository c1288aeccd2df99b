"""The job report: its HTML, and a real headless Chromium that loads its plots and videos."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vla.report import Media, render_report, write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "needs Debian's chromium (make test installs it: tools/system-deps --test)"
# Flags of a headless Chromium on a machine without a network or a GPU (see the env notes).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--allow-file-access-from-files", "--autoplay-policy=no-user-gesture-required"]


def dump_dom(page: Path, tmp_path: Path) -> str:
    """The page's DOM after its scripts ran (virtual time lets media load without real waiting)."""
    out = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000",
                          "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def media_files(tmp_path: Path) -> tuple[Path, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vla.video import annotate, write_mp4

    plot = tmp_path / "eval" / "summary.png"
    plot.parent.mkdir(parents=True)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0.4, 0.7])
    fig.savefig(plot)
    plt.close(fig)
    frames = [annotate(np.full((64, 64, 3), 10 * i, np.uint8), i, "pick_cube", "policy") for i in range(12)]
    video = write_mp4(tmp_path / "eval" / "videos" / "seed0.mp4", frames)
    return plot, video


def test_report_escapes_text_and_links_media_relative_to_itself(tmp_path: Path) -> None:
    page = render_report("run <1>", {"eval": {"torch success": "7/10 <b>"}},
                         {"eval": [Media("video", str(tmp_path / "a" / "v.mp4"), "seed 0 & 1")]}, tmp_path / "report")
    assert "run &lt;1&gt;" in page and "7/10 &lt;b&gt;" in page and "seed 0 &amp; 1" in page
    assert 'src="../a/v.mp4"' in page


def test_missing_media_are_left_out_with_a_note(tmp_path: Path) -> None:
    path = write_report(tmp_path / "report.html", "job", {"eval": {"x": 1}},
                        {"eval": [Media("plot", str(tmp_path / "nope.png"), "gone")]})
    text = path.read_text()
    assert "<img" not in text and "not found, left out" in text and "nope.png" in text


def test_media_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown media kind 'gif'"):
        Media("gif", "a.gif")


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_headless_chromium_shows_every_plot_and_video(tmp_path: Path) -> None:
    plot, video = media_files(tmp_path)
    page = write_report(tmp_path / "job" / "report.html", "main job",
                        {"eval": {"torch success": "7/10"}, "refine": {"gain": "+0.1"}},
                        {"eval": [Media("plot", str(plot), "success"), Media("video", str(video), "seed 0")]})
    dom = dump_dom(page, tmp_path)
    status = re.search(r'id="media-status"[^>]*>([^<]*)<', dom)
    assert status is not None, dom[-2000:]
    assert status.group(1) == "2 ready, 0 failed, 2 in all"
    assert "torch success" in dom and "refine" in dom


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_headless_chromium_reports_a_broken_video(tmp_path: Path) -> None:
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all")
    page = write_report(tmp_path / "report.html", "job", {}, {"eval": [Media("video", str(broken), "bad")]})
    status = re.search(r'id="media-status"[^>]*>([^<]*)<', dump_dom(page, tmp_path))
    assert status is not None and status.group(1) == "0 ready, 1 failed, 1 in all"
