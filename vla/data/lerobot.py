"""LeRobot v3.0 interop: export an EpisodeStore, import a dataset, read training windows from one.

LeRobot itself cannot be a dependency here (lerobot >= 0.5 needs Python 3.12, 0.4.x forces a CUDA
torch), so datasets are written and read with pyarrow and av following LeRobot's published v3.0
layout; see `vla.data.lerobot_layout` for the files and the feature mapping.

Supported: RGB cameras as video features (AV1/libsvtav1, h264 or hevc; yuv420p, even image sizes),
state and action vectors, reward, intervention/recovery flags, policy version, float64 source
timestamps, one task (instruction) per episode, several episodes per data/video file, chunked
files. Not supported: depth maps, images stored in parquet (dtype "image"), audio, several tasks
within one episode, per-episode image sizes (LeRobot has one shape per feature as well).
"""

from vla.data.lerobot_export import export_lerobot, lerobot_features
from vla.data.lerobot_import import import_lerobot, schema_from_meta
from vla.data.lerobot_layout import (
    CODEBASE_VERSION,
    LeRobotFormatError,
    LeRobotMeta,
    load_meta,
)
from vla.data.lerobot_video import VideoFrameReader
from vla.data.lerobot_window import LeRobotWindowDataset

__all__ = [
    "CODEBASE_VERSION",
    "LeRobotFormatError",
    "LeRobotMeta",
    "LeRobotWindowDataset",
    "VideoFrameReader",
    "export_lerobot",
    "import_lerobot",
    "lerobot_features",
    "load_meta",
    "schema_from_meta",
]
