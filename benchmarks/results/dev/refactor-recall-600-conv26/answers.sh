#!/bin/bash
# $1 checkout, $2 label: 20 conv-26 questions answered by the 1.5B from the imported example memory
cd "$1"; D=/tmp/recall/ans-$2-data; rm -rf $D /tmp/recall/ans-$2-out
PYTHONPATH=. /work/main/.venv/bin/python -m memsif import assets/example-memory-conv-26.json.gz --namespace dev-locomo-conv-26 --data-dir $D
PYTHONPATH=. /work/main/.venv/bin/python -m memsif eval locomo --data ../shared/data/locomo/locomo_dev.json --samples conv-26 \
  --system memsif --limit 20 --judge f1 --context-budget 600 --tag dev --data-dir $D --out /tmp/recall/ans-$2-out
