"""MP4 videos of rollouts (H.264 through PyAV), cameras side by side."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


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
