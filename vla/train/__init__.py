"""Pretraining: `trainer.Trainer` / `trainer.train` (AdamW, warm-up + cosine, EMA, clipping,
validation, TensorBoard, checkpoints, exact resume), configs in `config`, the resumable sampler."""
