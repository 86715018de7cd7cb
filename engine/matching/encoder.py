"""Runtime sentence encoder: all-MiniLM-L6-v2 as ONNX, run with onnxruntime + tokenizers + numpy.

No PyTorch. Files live in ``vectors/encoder/`` (model, ``tokenizer.json``,
``manifest.json`` with a sha256 per file). The session is created on first
use so importing the engine stays cheap.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import threading
from pathlib import Path

import numpy as np

from ..common.paths import vectors_dir
from ..common.text import clean_text
from ..errors import EngineError
from .inference import INFERENCE, run_inference

log = logging.getLogger("engine")


class EncoderUnavailableError(EngineError):
    """The encoder files are missing, corrupt or cannot be loaded.

    The message names the files, for the log. ``reason`` says why without a
    path: it reaches clients (the ``degraded`` note of a lexical answer), and a
    server's directory layout is not theirs to see. ``transient`` is True when
    the cause is a shortage that passes (out of file descriptors or memory):
    the index then tries again later instead of matching lexically for the
    life of the process.
    """

    def __init__(self, message: str, *, reason: str = "", transient: bool = False) -> None:
        super().__init__(message)
        self.reason = reason or "the encoder cannot be loaded"
        self.transient = transient


# A flood of connections during warm-up can take every file descriptor for a few seconds.
TRANSIENT_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM)
_TRANSIENT_TEXTS = tuple(os.strerror(code) for code in TRANSIENT_ERRNOS)


def _reason(what: str, exc: BaseException) -> str:
    """``what``, and for a shortage which one (its text names no path): said to clients."""
    if not is_transient(exc):
        return what
    code = next((c for c in TRANSIENT_ERRNOS if os.strerror(c) in str(exc)), None)
    shortage = os.strerror(code) if code else "out of memory"
    return f"{what}: {shortage}, for now"


def is_transient(exc: BaseException) -> bool:
    """True when ``exc``, or what caused it, is a shortage that passes (EMFILE, ENFILE, EAGAIN, ENOMEM).

    onnxruntime and tokenizers report such errors as text of their own, and an
    import that fails for want of a descriptor as an ImportError, so the
    message is read as well as the errno.
    """
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno in TRANSIENT_ERRNOS:
            return True
        if isinstance(exc, MemoryError) or any(text in str(exc) for text in _TRANSIENT_TEXTS):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file: the integrity check between the manifest and the files."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


HASH_CACHE_ENV = "AGENT_CAPABILITIES_CACHE"


def _hash_cache_path() -> Path:
    override = os.environ.get(HASH_CACHE_ENV)
    if override:
        return Path(override) / "file-hashes.json"
    import platformdirs

    return Path(platformdirs.user_cache_dir("agent-capabilities")) / "file-hashes.json"


def file_sha256(path: Path) -> str:
    """sha256 of a file, remembered by (size, mtime): hashing the weights costs up to 0.1 s per start.

    The full hash runs again whenever the size or modification time changes,
    so a replaced or corrupted file is still caught. A cache that cannot be
    read or written only means hashing every time.
    """
    stat = path.stat()
    key, stamp = str(path.resolve()), [stat.st_size, stat.st_mtime_ns]
    cache_path = _hash_cache_path()
    try:
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    entry = cache.get(key)
    if isinstance(entry, list) and len(entry) == 3 and entry[:2] == stamp:
        return entry[2]
    digest = sha256_file(path)
    cache[key] = [*stamp, digest]
    try:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache), encoding="utf-8")
        os.replace(tmp, cache_path)
    except OSError:
        pass
    return digest


class Encoder:
    """Embeds text exactly like sentence-transformers' all-MiniLM-L6-v2 (mean pool + L2)."""

    def __init__(self, directory: Path | str | None = None, *, threads: int | None = None) -> None:
        self.directory = Path(directory) if directory else vectors_dir() / "encoder"
        # On an idle 2-core machine two intra-op threads encode a short query in 1.2 ms, one in 2.06
        # (issue 22, docs/history.md); more add little. Busy cores get one thread (see ``_session``).
        self.threads = threads or min(2, os.cpu_count() or 1)
        self._sessions: dict[int, object] = {}  # intra-op threads -> ONNX session
        self._model: Path | None = None
        self._tokenizer = None
        self._inputs: set[str] = set()
        self._vocab: set[str] | None = None
        self._lock = threading.Lock()
        self.manifest: dict = {}

    @property
    def variant(self) -> str:
        """'int8' or 'fp32', from the manifest (empty before loading)."""
        return self.manifest.get("variant", "")

    def load(self) -> None:
        """Verify the files against the manifest and open the ONNX session."""
        with self._lock:
            if self._sessions:
                return
            manifest_path = self.directory / "manifest.json"
            if not manifest_path.is_file():
                raise EncoderUnavailableError(
                    f"encoder manifest not found at {manifest_path}; "
                    "run build_scripts/prepare/export_encoder.py or reinstall the package",
                    reason="the encoder's manifest.json is missing",
                )
            try:
                manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
                files = manifest["files"]
            except (OSError, ValueError, KeyError) as exc:
                raise EncoderUnavailableError(
                    f"{manifest_path} is unreadable: {exc}",
                    reason=_reason("the encoder's manifest.json is unreadable", exc),
                    transient=is_transient(exc),
                ) from exc
            for name, expected in files.items():
                path = self.directory / name
                if not path.is_file():
                    raise EncoderUnavailableError(
                        f"encoder file missing: {path}", reason=f"encoder file missing: {name}"
                    )
                try:
                    digest = file_sha256(path)
                except OSError as exc:
                    raise EncoderUnavailableError(
                        f"cannot read {path}: {exc}",
                        reason=_reason(f"encoder file {name} cannot be read", exc),
                        transient=is_transient(exc),
                    ) from exc
                if digest != expected:
                    raise EncoderUnavailableError(
                        f"encoder file {path} does not match its sha256 in manifest.json "
                        "(corrupt or replaced); reinstall or re-export it",
                        reason=f"encoder file {name} does not match its sha256 (corrupt or replaced)",
                    )
            model_file = next((n for n in files if n.endswith(".onnx")), None)
            if model_file is None:
                raise EncoderUnavailableError(
                    f"{manifest_path} lists no .onnx model", reason="the encoder's manifest lists no model"
                )
            try:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(self.directory / "tokenizer.json"))
                max_len = int(manifest.get("maxSeqLength", 256))
                # The model's tokenizer.json pads to and truncates at 128;
                # sentence-transformers truncates at 256 and pads per batch.
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=max_len)
                self._model = self.directory / model_file
                threads = self._threads_now()
                session = self._open_session(threads)
            except Exception as exc:  # noqa: BLE001 - any load failure means "no encoder"
                raise EncoderUnavailableError(
                    f"cannot load the ONNX encoder: {exc}",
                    reason=_reason("the ONNX encoder cannot be loaded", exc),
                    transient=is_transient(exc),
                ) from exc
            self._inputs = {i.name for i in session.get_inputs()}
            self._tokenizer = tokenizer
            self.manifest = manifest
            self._sessions[threads] = session  # last: a session means the encoder is ready

    def _threads_now(self) -> int:
        """Intra-op threads for the next run: one while the cores are busy, where a second would only wait."""
        return 1 if self.threads > 1 and INFERENCE.contended() else self.threads

    def _open_session(self, threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Between the operators of a run the second thread spins: with spinning off it slept and was
        # woken 28 times per encode, which made the encode slower than at b951d57 (1.2 -> 2.05 ms on
        # an idle machine, issue 22). It stops when the run returns, so it cannot starve the scoring.
        options.add_session_config_entry("session.force_spinning_stop", "1")
        return ort.InferenceSession(
            str(self._model), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def _session(self):
        """The session for this run, opened on first use; both give the same vectors, bit for bit.

        Two threads spin through a run, which pays only while a core is free. On a busy machine
        (calls queued behind this one, or a load average of 1.5 per core) a spinning thread burns the
        slices its partner waits for: at load 8 on 2 cores a 2-thread encode took 8.6 ms and 8 ms of
        CPU, a 1-thread one 2.6 ms and 2.7 ms of CPU (docs/performance.md).
        """
        threads = self._threads_now()
        session = self._sessions.get(threads)
        if session is None:
            try:
                session = self._sessions[threads] = self._open_session(threads)
            except Exception as exc:  # noqa: BLE001 - the session already open will do
                log.warning("cannot open a %d-thread ONNX session (%s); using the open one", threads, exc)
                session = self._sessions[threads] = next(iter(self._sessions.values()))
        return session

    def vocabulary(self) -> set[str]:
        """Whole-word entries of the tokenizer vocabulary: words the model knows as spelled."""
        self.load()
        if self._vocab is None:
            self._vocab = {w for w in self._tokenizer.get_vocab() if w.isalpha()}
        return self._vocab

    def encode(self, texts: list[str], *, batch_size: int | None = None) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text.

        Quantised models embed one text at a time by default: dynamic int8
        quantisation scales activations per batch, so a text's vector would
        otherwise depend on what it was batched with. The session runs one call
        at a time (``engine.matching.inference``): concurrent callers queue for
        their turn instead of fighting over the cores.
        """
        self.load()
        if batch_size is None:
            batch_size = 1 if self.variant.startswith("int8") else 32
        if not texts:
            return np.zeros((0, int(self.manifest.get("dimension", 384))), dtype=np.float32)
        return run_inference(self._encode_all, texts, batch_size)

    def _encode_all(self, texts: list[str], batch_size: int) -> np.ndarray:
        rows = []
        for start in range(0, len(texts), batch_size):
            rows.append(self._encode_batch(texts[start : start + batch_size]))
        return np.vstack(rows)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch([clean_text(t) for t in texts])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = enc.attention_mask
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = self._session().run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True) + 1e-12
        return (pooled / norm).astype(np.float32)
