"""Replay for tests/engine/test_crash.py: ingest a long synthetic chat into an embedded store, slowly, so the
test can kill -9 this process in the middle. Usage: python crash_ingest.py DATA_DIR"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from tests.engine.test_crash import chat, slow_judge
from tests.fakes import FakeLLM, HashEmbedder, TableEntities

engine = MemSIF(MemSIFConfig(data_dir=sys.argv[1], core_facts=False, sem_mapping="affine"),
                llm=FakeLLM({"segment_judge": slow_judge, "trajectory_judge": 0.7}), embedder=HashEmbedder(),
                entities=TableEntities())
messages = chat()
for start in range(0, len(messages), 20):  # several ingests, like a live chat
    engine.ingest(messages[start:start + 20], namespace="crash")
    print(f"ingested {start + 20}", flush=True)
time.sleep(60)
