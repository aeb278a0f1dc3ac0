"""The current CoreFacts of one profile memory; those not already labelled (same subject, statement and
sources) are written shuffled for blind labelling."""
import json, random, sys
from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
L = 'benchmarks/results/dev/build-profile/fact-labels/'
old = [json.loads(l) for l in open(L + 'facts.jsonl')]
lab = {json.loads(l)['item']: json.loads(l) for l in open(L + 'labels.jsonl')}
known = {(r['subject'], r['statement'], tuple(s['id'] for s in r['sources'])): lab[r['item']] for r in old}
eng = MemSIF(MemSIFConfig.from_env(data_dir=sys.argv[1]))
msgs = {m.id: m for m in eng.messages("profile")}
rows, reused = [], []
for f in eng.facts("profile"):
    srcs = [{"id": m.id, "speaker": m.speaker, "date": str(m.time)[:10] if m.time else "", "text": m.text}
            for m in (msgs[i] for i in f.source_message_ids)]
    k = (f.subject, f.statement, tuple(f.source_message_ids))
    if k in known:
        reused.append({"subject": f.subject, "statement": f.statement, **{x: known[k][x] for x in ("supported", "durable")}})
    else:
        rows.append({"subject": f.subject, "type": f.type, "statement": f.statement, "sources": srcs})
random.Random(11).shuffle(rows)
with open(sys.argv[2], "w") as out:
    for n, r in enumerate(rows):
        out.write(json.dumps({"item": n, **r}) + "\n")
json.dump(reused, open(sys.argv[3], "w"), indent=1)
print(len(rows), "to label,", len(reused), "labelled before")
