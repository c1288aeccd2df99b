"""Video files of a LeRobot v3.0 dataset: an episode-appending mp4 writer and a frame reader (PyAV).

The writer encodes episodes one after another into videos/<key>/chunk-XXX/file-XXX.mp4 with one
pts per frame, so episode e spans [from_timestamp, to_timestamp) = [first frame, end) / fps in its
file. The reader finds frames by time the way LeRobot's pyav backend does.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from vla.data.lerobot_layout import DEFAULT_TOLERANCE_S, VIDEO_PATH, LeRobotFormatError, next_chunk_file

_MB = 1024 * 1024


class VideoEpisodeWriter:
    """Appends episodes to videos/<key>/chunk-XXX/file-XXX.mp4, starting a new file past the size limit."""

    def __init__(
        self,
        root: Path,
        key: str,
        fps: float,
        codec: str,
        crf: int,
        gop: int,
        limit_mb: float,
        chunks_size: int,
    ) -> None:
        self.root, self.key, self.fps, self.codec = root, key, fps, codec
        self.options = {"g": str(gop), "crf": str(crf)}
        if codec == "hevc":
            # x265 writes B-frames by default; LeRobot's torchcodec path (seek_mode="approximate")
            # then returns the frame 1/fps late. No B-frames, no error (checked with lerobot 0.6.1).
            self.options["bf"] = "0"
        self.limit, self.chunks_size = limit_mb * _MB, chunks_size
        self.chunk = self.file = 0
        self.container: Any = None
        self.stream: Any = None
        self.frames_in_file = 0
        self.bytes_in_file = 0
        self.first_path: Path | None = None

    def _open(self, h: int, w: int) -> None:
        import av

        path = self.root / VIDEO_PATH.format(video_key=self.key, chunk_index=self.chunk, file_index=self.file)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.first_path = self.first_path or path
        self.container = av.open(str(path), "w")
        rate = Fraction(self.fps).limit_denominator(1001)
        self.stream = self.container.add_stream(self.codec, rate=rate, options=self.options)
        self.stream.width, self.stream.height, self.stream.pix_fmt = w, h, "yuv420p"
        self.stream.time_base = 1 / rate  # pts counts frames in this file
        self.frames_in_file = self.bytes_in_file = 0

    def _mux(self, packets: list[Any]) -> None:
        for p in packets:
            self.bytes_in_file += p.size
            self.container.mux(p)

    def close(self) -> None:
        if self.container is not None:
            self._mux(self.stream.encode())
            self.container.close()
            self.container = None

    def add_episode(self, frames: np.ndarray) -> dict[str, Any]:
        import av

        if self.container is not None and self.bytes_in_file >= self.limit:
            self.close()
            self.chunk, self.file = next_chunk_file(self.chunk, self.file, self.chunks_size)
        if self.container is None:
            self._open(frames.shape[1], frames.shape[2])
        start = self.frames_in_file
        for i, image in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = start + i
            self._mux(self.stream.encode(frame))
        self.frames_in_file += len(frames)
        prefix = f"videos/{self.key}/"
        return {
            prefix + "chunk_index": self.chunk,
            prefix + "file_index": self.file,
            prefix + "from_timestamp": start / self.fps,
            prefix + "to_timestamp": self.frames_in_file / self.fps,
        }


def video_info(path: Path, gop: int | None = None, crf: int | None = None) -> dict[str, Any]:
    """The `info` block of a video feature, with the encoder settings LeRobot's editing tools
    reuse when they re-encode (without them they fall back to their defaults)."""
    import av

    with av.open(str(path)) as c:
        s = c.streams.video[0]
        info: dict[str, Any] = {
            "video.height": s.height,
            "video.width": s.width,
            "video.codec": s.codec_context.codec.canonical_name,
            "video.pix_fmt": s.pix_fmt,
            "is_depth_map": False,
            "video.fps": int(s.base_rate) if float(s.base_rate).is_integer() else float(s.base_rate),
            "video.channels": 3,
            "has_audio": False,
        }
    if gop is not None:
        info["video.g"] = gop
    if crf is not None:
        info["video.crf"] = crf
    info.update({"video.preset": None, "video.fast_decode": 0, "video.video_backend": "pyav",
                 "video.extra_options": {}})
    return info


class VideoFrameReader:
    """Decodes frames by timestamp from mp4 files, keeping each container open for reuse.

    Like LeRobot's pyav path it seeks to the keyframe before the first wanted time and decodes
    forward to the last one, accepting the closest frame within `tolerance_s`. When the wanted
    frames follow the last decoded one closely it keeps decoding without seeking (sequential reads).
    Not shareable across processes: create one per DataLoader worker (lazily, after the fork).
    """

    def __init__(self, tolerance_s: float = DEFAULT_TOLERANCE_S, threads: int = 1, max_open: int = 64) -> None:
        self.tolerance_s = tolerance_s
        self.threads = threads
        self.max_open = max_open
        self._open: dict[Path, _OpenVideo] = {}

    def close(self) -> None:
        for video in self._open.values():
            video.container.close()
        self._open.clear()

    def _get(self, path: Path) -> _OpenVideo:
        video = self._open.get(path)
        if video is None:
            import av

            if not path.is_file():
                raise LeRobotFormatError(f"{path}: missing video file")
            if len(self._open) >= self.max_open:  # bound open file handles; drop the oldest
                oldest = next(iter(self._open))
                self._open.pop(oldest).container.close()
            container = av.open(str(path))
            if not container.streams.video:
                raise LeRobotFormatError(f"{path}: no video stream")
            stream = container.streams.video[0]
            stream.thread_count = self.threads
            from av.video.reformatter import VideoReformatter

            # A kept reformatter reuses its swscale context; frame.to_ndarray(format=...) builds
            # one per frame, which costs 6x the conversion itself at 84x84.
            video = _OpenVideo(container, stream, stream.time_base or Fraction(1, 1), VideoReformatter())
            self._open[path] = video
        return video

    def read(self, path: Path, times: np.ndarray) -> np.ndarray:
        """uint8 [len(times), H, W, 3]: the frame shown at each time (seconds from the file start)."""
        times = np.asarray(times, dtype=np.float64)
        order = np.argsort(times, kind="stable")
        wanted = times[order]
        video = self._get(path)
        tol = self.tolerance_s
        first, last = float(wanted[0]), float(wanted[-1])
        if not (
            video.iterator is not None
            and video.last_time is not None
            and video.last_time < first - tol
            and first - video.last_time < video.resume_window
        ):
            video.container.seek(
                max(0, int(first / video.time_base)), stream=video.stream, backward=True, any_frame=False
            )
            video.iterator = video.container.decode(video.stream)
            video.last_time = None
        out: list[np.ndarray | None] = [None] * len(wanted)
        best = np.full(len(wanted), np.inf)
        j = 0
        loaded: list[float] = []
        for frame in video.iterator:
            t = float(frame.pts * video.time_base)
            if video.last_time is not None and video.prev_gap is None:
                video.prev_gap = t - video.last_time
            video.last_time = t
            loaded.append(t)
            while j < len(wanted) and wanted[j] < t - tol:
                j += 1  # passed without a match; reported below
            k = j
            array = None
            while k < len(wanted) and abs(wanted[k] - t) < tol:
                if abs(wanted[k] - t) < best[k]:
                    if array is None:
                        array = video.reformatter.reformat(frame, format="rgb24").to_ndarray()
                    out[k], best[k] = array, abs(wanted[k] - t)
                k += 1
            if t >= last - tol:
                break
        else:
            video.iterator = None  # end of file
        missing = [i for i, o in enumerate(out) if o is None]
        if missing:
            video.iterator = None
            near = min(loaded, key=lambda x: abs(x - wanted[missing[0]])) if loaded else None
            raise LeRobotFormatError(
                f"{path}: no frame within {tol} s of t={wanted[missing[0]]:.6f} s "
                f"(closest decoded: {near}); the episode's from_timestamp/timestamp "
                f"do not match the video"
            )
        frames = np.empty((len(times), *out[0].shape), np.uint8)  # type: ignore[union-attr]
        frames[order] = np.stack(out)  # type: ignore[arg-type]
        return frames


@dataclass
class _OpenVideo:
    container: Any
    stream: Any
    time_base: Fraction
    reformatter: Any
    iterator: Any = None
    last_time: float | None = None
    prev_gap: float | None = None

    @property
    def resume_window(self) -> float:
        # Decoding forward beats a seek while the gap is a few frames (a seek restarts at a keyframe).
        return 4 * (self.prev_gap or 0.0)
