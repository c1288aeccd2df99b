"""MP4 videos of rollouts (H.264 through PyAV): a viewing camera at a watchable size, or the policy's
cameras side by side, with the step, the sub-task and who is in control written below each frame."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

# who is in control -> the colour of its label (a reader tells takeovers apart at a glance); any other
# label is drawn in white
CONTROL_COLOURS = {"policy": (90, 210, 110), "guided": (110, 170, 255), "intervener": (255, 160, 50),
                   "human": (255, 160, 50), "rewind": (240, 90, 90)}
BAR_HEIGHT = 20


def tile_cameras(images: dict[str, np.ndarray]) -> np.ndarray:
    """One frame with the cameras side by side (same height required)."""
    return np.concatenate([images[k] for k in sorted(images)], axis=1)


def write_mp4(path: str | Path, frames: Sequence[np.ndarray], fps: float = 20.0) -> Path:
    """Write uint8 HxWx3 frames; odd sizes are padded to even (yuv420p needs it)."""
    if not frames:
        raise ValueError(f"{path}: no frames to write")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = frames[0].shape[:2]
    ph, pw = h + h % 2, w + w % 2
    import av  # only where videos are written (headless GPU hosts may lack PyAV)

    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=round(fps))
        stream.width, stream.height, stream.pix_fmt = pw, ph, "yuv420p"
        stream.options = {"crf": "20", "preset": "veryfast"}
        for frame in frames:
            if frame.shape != (h, w, 3) or frame.dtype != np.uint8:
                raise ValueError(f"{path}: frame of shape {frame.shape} {frame.dtype}, expected {(h, w, 3)} uint8")
            padded = np.pad(frame, ((0, ph - h), (0, pw - w), (0, 0)), mode="edge")
            for packet in stream.encode(av.VideoFrame.from_ndarray(padded, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def can_view(env: Any, obs: dict[str, Any], size: int) -> bool:
    """Whether `view_frame` has something to show: a viewing camera, or observation images."""
    return bool(obs["images"]) or (size > 0 and hasattr(getattr(env, "unwrapped", env), "render_view"))


def view_frame(env: Any, obs: dict[str, Any], size: int) -> np.ndarray:
    """The frame a person watches: the task's viewing camera at `size` x `size` where the task has one
    (`render_view`, the native tasks), else its observation cameras side by side, scaled up by a whole
    factor to about `size` high (nearest neighbour: no invented detail). size 0: the cameras as they are."""
    unwrapped = getattr(env, "unwrapped", env)
    if size > 0 and hasattr(unwrapped, "render_view"):
        return unwrapped.render_view(size)
    tiled = tile_cameras(obs["images"])
    k = max(1, size // tiled.shape[0]) if size > 0 else 1
    return tiled if k == 1 else np.repeat(np.repeat(tiled, k, axis=0), k, axis=1)


@cache
def _font(size: int) -> Any:
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow < 10.1 or no FreeType: the fixed bitmap font
        return ImageFont.load_default()


def annotate(frame: np.ndarray, step: int, subtask: str | None, control: str) -> np.ndarray:
    """`frame` with a bar below it: the step, the current sub-task and who is in control, in its colour."""
    from PIL import Image, ImageDraw

    h, w = frame.shape[:2]
    img = Image.new("RGB", (w, h + BAR_HEIGHT), (20, 20, 24))
    img.paste(Image.fromarray(frame), (0, 0))
    draw = ImageDraw.Draw(img)
    font = _font(BAR_HEIGHT - 7)
    draw.text((4, h + 3), f"step {step}  {subtask or ''}", fill=(235, 235, 235), font=font)
    right = draw.textlength(control, font=font)
    draw.text((w - right - 4, h + 3), control, fill=CONTROL_COLOURS.get(control.lower(), (235, 235, 235)),
              font=font)
    return np.asarray(img)
