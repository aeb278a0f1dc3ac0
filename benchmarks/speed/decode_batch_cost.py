"""What evaluating k tokens at once costs against one, after an answer-sized prompt: the figure that
decides whether speculative decoding (drafted tokens checked in one evaluation: prompt lookup, a
JSON schema's forced tokens, a draft model) can pay on this CPU. Where k tokens cost about one, a
draft of k saves up to k − 1 steps; where they cost k times one, nothing is saved whatever the
acceptance.

    PYTHONPATH=. python benchmarks/speed/decode_batch_cost.py --out FILE.json

The packaged 1.5B on llama.cpp with the CPU library chosen at run time; the median of 8 evaluations per
k of tokens appended after a ~800-token prompt, with the logits after each of them (what checking a
draft needs), the cache cut back to the prompt before each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from memsif.config import MemSIFConfig
from memsif.llm.llamacpp_backend import LlamaCppLLM

PROMPT = ("Memory:\n" + "\n".join(f"- Caroline: On day {i} I went to the support group and talked about "
                                    f"my plans for the art show with Melanie." for i in range(30))
          + "\nQuestion: When did Caroline go to the support group?\nAnswer:")
SIZES = (1, 2, 3, 4, 6, 8)
REPEATS = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    backend = LlamaCppLLM.from_config(MemSIFConfig.from_env())
    llm = backend._llm
    tokens = llm.tokenize(PROMPT.encode(), add_bos=True, special=True)
    llm.reset()
    llm.eval(tokens)
    n_prompt = llm.n_tokens
    rows = []
    for k in SIZES:
        seconds = []
        for _ in range(REPEATS):
            llm._ctx.kv_cache_seq_rm(-1, n_prompt, -1)
            start = time.perf_counter()
            llm._batch.set_batch(batch=tokens[1:1 + k], n_past=n_prompt, logits_all=True)  # a draft's check
            llm._ctx.decode(llm._batch)  # needs the logits after every drafted token
            seconds.append(time.perf_counter() - start)
        rows.append({"k": k, "s_per_eval": round(statistics.median(seconds), 4)})
    one = rows[0]["s_per_eval"]
    for row in rows:
        row["x_one_token"] = round(row["s_per_eval"] / one, 2)
        print(f"k={row['k']}: {row['s_per_eval']:.4f} s per evaluation, {row['x_one_token']:.2f}x one token")
    result = {"prompt_tokens": n_prompt, "cpu": backend.cpu.describe(),
              "rows": rows}
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
