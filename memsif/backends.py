"""The back-ends one engine works with, as the one bundle every pipeline takes: its settings, the LLM
with the model's measured profile, the embedder, the entity extractor and the store, each loaded the
first time a step reads it (thread-safe), so a read that needs no model never loads one.
"""

from __future__ import annotations

import threading
import time

from memsif.config import MemSIFConfig
from memsif.embed import Embedder
from memsif.entities import EntityExtractor
from memsif.errors import ConfigError
from memsif.llm import LLM
from memsif.llm.profiles import ModelProfile, configured_profile
from memsif.store import Store, open_store

__all__ = ["Backends"]


def load_embedder(embedder_model: str, store: Store | None) -> Embedder:
    """The configured embedder, checked against ``store`` when that was opened by its record.

    Raises:
        EmbedderError: it cannot be loaded, or the store holds vectors of another embedder.
    """
    from memsif.embed import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(embedder_model)
    if store is not None and store.dim is not None:
        store.ensure_collections(embedder.name, embedder.dim)
    return embedder


def open_by_record(store: Store, embedder_model: str) -> bool:
    """Open ``store`` for the embedder its record names when that is ``embedder_model`` (reads then
    need no embedder; the embedder is checked against the record when it loads); True when the
    store is open."""
    from memsif.embed import embedder_name

    if store.dim is None:
        recorded = store.recorded_embedder()
        if recorded is not None and recorded[0] == embedder_name(embedder_model):
            store.ensure_collections(*recorded)
    return store.dim is not None


class Backends:
    """Settings and back-ends, loaded lazily from ``config`` unless handed in.

    Args:
        config: the settings every step reads.
        llm, embedder, entities, store: back-ends to use instead of the configured ones (tests pass a fake
            LLM, a deterministic embedder and an in-memory store).
        profile: what the model was measured to do, instead of the profile its name (or the setting
            ``llm_profile``) resolves when it loads (``memsif.llm.profiles.configured_profile``).
    """

    #: settings that bind a store to its contents; a bundle derived for other settings must keep them
    STORE_FIELDS = ("embedder_model", "data_dir", "qdrant_url", "qdrant_api_key", "use_spacy")

    def __init__(self, config: MemSIFConfig, *, llm: LLM | None = None, embedder: Embedder | None = None,
                 entities: EntityExtractor | None = None, store: Store | None = None,
                 profile: ModelProfile | None = None) -> None:
        self.config = config
        self._llm, self._embedder, self._entities, self._store = llm, embedder, entities, store
        self._profile = profile
        self._load_locks = {name: threading.Lock() for name in ("llm", "embedder", "entities", "store")}

    def with_config(self, config: MemSIFConfig) -> Backends:
        """A bundle over the same store, embedder and entity extractor with ``config``; the LLM (and a profile
        handed in) is kept for the same model, another one is loaded once per process and model (``load_llm``).

        Raises:
            ConfigError: ``config`` changes a store-binding setting (embedder, data folder, server, NER).
        """
        changed = [f for f in self.STORE_FIELDS if config.setting(f) != self.config.setting(f)]
        if changed:
            raise ConfigError(f"{', '.join(changed)} cannot change for a running engine (the store is "
                              "bound to them); restart with the new setting instead.")
        same_model = config.llm_key == self.config.llm_key and config.model.llm_profile == self.config.model.llm_profile
        return Backends(config, llm=self._llm if same_model else None, embedder=self.embedder,
                        entities=self.entity_extractor, store=self.store,
                        profile=self._profile if same_model else None)

    @property
    def llm(self) -> LLM:
        """The LLM handed in, else the configured one (``load_llm``: one per process and model)."""
        with self._load_locks["llm"]:
            if self._llm is None:
                from memsif.llm import load_llm

                self._llm = load_llm(self.config)
            return self._llm

    @property
    def profile(self) -> ModelProfile:
        """What the LLM was measured to do (``ModelProfile``), resolved once from its name and the setting
        ``llm_profile`` unless handed in. Raises ConfigError: ``llm_profile`` names no measured model."""
        if self._profile is None:
            self._profile = configured_profile(self.config.model.llm_profile, self.llm.name)
        return self._profile

    @property
    def embedder(self) -> Embedder:
        with self._load_locks["embedder"]:
            if self._embedder is None:
                self._embedder = load_embedder(self.config.model.embedder_model, self._store)
            return self._embedder

    @property
    def entity_extractor(self) -> EntityExtractor:
        with self._load_locks["entities"]:
            if self._entities is None:
                from memsif.entities import load_entity_extractor

                self._entities = load_entity_extractor(self.config.model.use_spacy)
            return self._entities

    @property
    def store(self) -> Store:
        """The store, opened once (``open_by_record``). Raises EmbedderError: another embedder's store."""
        if self._store is not None and self._store.dim is not None:  # every read and write comes through here
            return self._store
        with self._load_locks["store"]:
            if self._store is None:
                self._store = open_store(self.config)
            if self._embedder is None and open_by_record(self._store, self.config.model.embedder_model):
                return self._store
        embedder = self.embedder  # outside the store lock: loading it may take seconds
        with self._load_locks["store"]:
            if self._store.dim is None:
                self._store.ensure_collections(embedder.name, embedder.dim)
            return self._store

    def load_models(self) -> float:
        """Load every back-end now; returns the seconds it took. (Loading in threads was slower here:
        most of the time is Python imports, which hold the GIL.)"""
        start = time.perf_counter()
        _ = self.llm, self.profile, self.embedder, self.entity_extractor, self.store
        return time.perf_counter() - start

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
