"""An encoder wrapper for build steps that embed the same texts many times: each text once per run."""

from __future__ import annotations

import numpy as np

from build_scripts.prepare.progress import Progress


class EncodingCache:
    """The encoder, embedding each distinct text once per run.

    The fit embeds the same texts many times: a training question for the head,
    again when the index ranks it, and each calibration question once per pass.
    The shipped int8 encoder embeds one text at a time, so a remembered vector is
    the one a new call would give.
    """

    def __init__(self, encoder, progress: Progress | None = None) -> None:
        self.encoder = encoder
        self.progress = progress
        self.vectors: dict[str, np.ndarray] = {}

    def load(self) -> None:
        self.encoder.load()

    def vocabulary(self) -> set[str]:
        return self.encoder.vocabulary()

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        for start in range(0, len(missing), 64):
            chunk = missing[start : start + 64]
            self.vectors.update(zip(chunk, self.encoder.encode(chunk), strict=True))
            if self.progress is not None:
                self.progress.step("embedding: distinct texts so far", len(self.vectors))
        if not texts:
            return self.encoder.encode([])
        return np.vstack([self.vectors[t] for t in texts])
