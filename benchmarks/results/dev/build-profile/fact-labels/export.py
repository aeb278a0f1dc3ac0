"""Export the current CoreFacts of profile memories, shuffled together, for blind labelling."""
import json, random, sys
from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
rows, key = [], {}
for tag, folder in (("a", sys.argv[1]), ("b", sys.argv[2])):
    eng = MemSIF(MemSIFConfig.from_env(data_dir=folder))
    msgs = {m.id: m for m in eng.messages("profile")}
    for f in eng.facts("profile"):
        srcs = []
        for mid in f.source_message_ids:
            m = msgs[mid]
            srcs.append({"id": m.id, "speaker": m.speaker, "date": str(m.time)[:10] if m.time else "", "text": m.text})
        rows.append({"subject": f.subject, "type": f.type, "statement": f.statement, "sources": srcs})
        key[len(rows) - 1] = tag
random.Random(7).shuffle(order := list(range(len(rows))))
with open(sys.argv[3], "w") as out:
    for n, i in enumerate(order):
        out.write(json.dumps({"item": n, **rows[i]}) + "\n")
json.dump({n: key[i] for n, i in enumerate(order)}, open(sys.argv[4], "w"))
print(len(rows))
