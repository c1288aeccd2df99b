"""One HTML page a person opens after a job: the summary table, the plots and the videos.

The page is a single file beside the job's outputs; it links plots and videos by paths relative to
itself (the folder can be moved or served as it is) and needs nothing from the network. A small
script marks each plot and video once the browser has loaded it (`data-state="ready"` or "error")
and sums them up in `#media-status`, so a headless browser can check that everything shows.
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KINDS = ("plot", "video")


@dataclass(frozen=True)
class Media:
    kind: str  # plot | video
    path: str
    caption: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown media kind '{self.kind}' (valid: {', '.join(KINDS)})")


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.35em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.stage { font-weight: 600; white-space: nowrap; }
.media { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; }
figcaption { font-size: 0.85em; color: #555; max-width: 512px; }
img.plot { max-width: 520px; border: 1px solid #ddd; }
.note { color: #555; font-size: 0.9em; }
"""

# Marks every plot and video when the browser has it (or failed to), and sums them up.
_SCRIPT = """
(function () {
  const items = Array.from(document.querySelectorAll('img.plot, video'));
  const status = document.getElementById('media-status');
  function update() {
    const ready = items.filter(e => e.dataset.state === 'ready').length;
    const failed = items.filter(e => e.dataset.state === 'error').length;
    status.textContent = ready + ' ready, ' + failed + ' failed, ' + items.length + ' in all';
    status.dataset.done = String(ready + failed === items.length);
  }
  for (const e of items) {
    const mark = (state) => { e.dataset.state = state; update(); };
    if (e.tagName === 'VIDEO') {
      if (e.readyState >= 2) mark(e.videoWidth > 0 ? 'ready' : 'error');
      e.addEventListener('loadeddata', () => mark(e.videoWidth > 0 ? 'ready' : 'error'));
      e.addEventListener('error', () => mark('error'));
      e.load();
    } else {
      if (e.complete) mark(e.naturalWidth > 0 ? 'ready' : 'error');
      e.addEventListener('load', () => mark(e.naturalWidth > 0 ? 'ready' : 'error'));
      e.addEventListener('error', () => mark('error'));
    }
  }
  update();
})();
"""


def _cell(value: Any) -> str:
    return html.escape(str(value))


def render_report(title: str, results: Mapping[str, Mapping[str, Any]], media: Mapping[str, Sequence[Media]],
                  base: Path, notes: Sequence[str] = ()) -> str:
    """The page's HTML: one table row per stage, then each stage's plots and videos (paths made
    relative to `base`, the folder the page is written to)."""
    rows = "\n".join(
        f'<tr><td class="stage">{_cell(stage)}</td><td>'
        + "<br>".join(f"<b>{_cell(k)}</b>: {_cell(v)}" for k, v in figures.items()) + "</td></tr>"
        for stage, figures in results.items())
    sections = []
    for stage, items in media.items():
        if not items:
            continue
        figs = []
        for m in items:
            src = html.escape(Path(os.path.relpath(Path(m.path).resolve(), base.resolve())).as_posix(), quote=True)
            tag = (f'<img class="plot" src="{src}" alt="{_cell(m.caption)}">' if m.kind == "plot" else
                   f'<video src="{src}" controls muted loop playsinline preload="auto"></video>')
            figs.append(f"<figure>{tag}<figcaption>{_cell(m.caption)}</figcaption></figure>")
        sections.append(f'<h2>{_cell(stage)}</h2>\n<div class="media">\n' + "\n".join(figs) + "\n</div>")
    note_html = "".join(f'<p class="note">{_cell(n)}</p>' for n in notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_cell(title)}</title><style>{_STYLE}</style></head>
<body>
<h1>{_cell(title)}</h1>
<p class="note">written {time.strftime('%Y-%m-%d %H:%M:%S')}; media: <span id="media-status">loading</span></p>
{note_html}
<table><tr><th>stage</th><th>what it did and measured</th></tr>
{rows}
</table>
{chr(10).join(sections)}
<script>{_SCRIPT}</script>
</body></html>
"""


def write_report(path: str | Path, title: str, results: Mapping[str, Mapping[str, Any]],
                 media: Mapping[str, Sequence[Media]], notes: Sequence[str] = ()) -> Path:
    """Write the page to `path` (media that do not exist are left out, with a note saying so)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    present = {stage: [m for m in items if Path(m.path).is_file()] for stage, items in media.items()}
    missing = [m.path for items in media.values() for m in items if not Path(m.path).is_file()]
    notes = [*notes, *([f"not found, left out: {', '.join(missing)}"] if missing else [])]
    path.write_text(render_report(title, results, present, path.parent, notes))
    return path
