import json, sys, tempfile
from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.io import load_transcripts
[t] = load_transcripts("assets/locomo-conv-26.json")
eng = MemSIF(MemSIFConfig(data_dir=tempfile.mkdtemp(), core_facts=False))
eng.ingest(t.messages[:40], namespace="x")
out = [d.model_dump(mode="json", exclude={"recorded_at", "seconds"}) for d in eng.decisions("x")]
segs = [s.model_dump(mode="json") for s in eng.segments("x")]
json.dump({"decisions": out, "segments": segs, "trajectories": [t.model_dump(mode="json") for t in eng.trajectories("x")]},
          open(sys.argv[1], "w"), indent=1, sort_keys=True, default=str)
print(len(out), "decisions", len(segs), "segments")
