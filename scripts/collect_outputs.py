"""Collect raw model outputs for DetectBench-format prompts from an OpenAI-compatible server.

The prompts are the project's own (evaluation.prompting.methods / evaluation.prompting.prompts) on real items of
DetectBench v1.3, shown with numbers or letters and in the original or a permuted order. Each
output is written as one JSON line with what is needed to read it again (item id, shown order,
label style, method, sample, finish reason); labelling by hand happens afterwards
(tests/evaluation/corpus/README.md). Only the standard library and the project's pure modules.

    python scripts/collect_outputs.py --base-url http://127.0.0.1:8765/v1 --model smollm2 \\
        --items 30 --out /tmp/raw_outputs.jsonl
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import urllib.request
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_DIR.parent / "shared" / "detectbench" / "v1.3"
DEFAULT_METHODS = "naive,self-cot,detective-thinking,self-consistency,naive-3shot,free-text"


def item_view(record: dict):
    """The item as the methods see it (the project's pure modules, importable once the repo is on the path)."""
    from annotation.clue_graph.parse import gold_key_information
    from evaluation.prompting.prompts import ItemView

    graph = record.get("clue_graph") or {}
    return ItemView(id=record["id"], context=record["context"], question=record["question"],
                    options=tuple(record["options"]), answer_index=record["answer"],
                    key_information=tuple(gold_key_information(graph.get("evidence"))),
                    reasoning=graph.get("multi_hop_reasoning", ""))


def load(path: Path) -> list:
    with path.open(encoding="utf-8") as handle:
        return [item_view(json.loads(line)) for line in handle if line.strip()]


def chat(base_url: str, model: str, messages: list[dict], *, max_tokens: int, temperature: float, seed: int,
         timeout: float) -> dict:
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature,
            "seed": seed}
    request = urllib.request.Request(f"{base_url.rstrip('/')}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--items", type=int, default=30, help="how many test items (drawn by --seed)")
    parser.add_argument("--skip", type=int, default=0, help="skip this many drawn items (to collect a new batch)")
    parser.add_argument("--methods", default=DEFAULT_METHODS)
    parser.add_argument("--k", type=int, default=3, help="samples for self-consistency")
    parser.add_argument("--letters", type=float, default=0.25, help="share of items shown with letter labels")
    parser.add_argument("--permute", type=float, default=0.5, help="share of items shown in a permuted order")
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--temperature", type=float, default=0.0, help="of each prompt's first output")
    parser.add_argument("--samples", type=int, default=2,
                        help="more outputs of each prompt at --sample-temperature (the server reuses its cache)")
    parser.add_argument("--sample-temperature", type=float, default=0.8, help="also self-consistency's")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO_DIR))
    from evaluation.prompting.methods import get_method
    from evaluation.prompting.prompts import choose_demonstrations, present

    tests, train = load(args.data / "test.jsonl"), load(args.data / "train.jsonl")
    by_id = {item.id: item for item in train}
    draw = random.Random(args.seed)
    chosen = draw.sample(tests, args.skip + args.items)[args.skip:]
    written = 0
    with args.out.open("a", encoding="utf-8") as out:
        for number, item in enumerate(chosen):
            style = "letters" if draw.random() < args.letters else "numbers"
            shown = present(item, seed=args.seed, permute=draw.random() < args.permute, label_style=style)
            demo_ids = choose_demonstrations(pool_ids=list(by_id), seed=args.seed + item.id, exclude=item.id)
            demos = [present(by_id[i], seed=args.seed, permute=False, label_style=style) for i in demo_ids]
            for name in args.methods.split(","):
                method = get_method(name)
                messages = method.messages(shown, demos)
                consistency = name == "self-consistency"
                for sample in range(args.k if consistency else 1 + args.samples):
                    temperature = args.sample_temperature if consistency or sample else args.temperature
                    started = time.monotonic()
                    reply = chat(args.base_url, args.model, messages, max_tokens=args.max_tokens,
                                 temperature=temperature, seed=args.seed + sample, timeout=args.timeout)
                    choice = reply["choices"][0]
                    row = {
                        "item_id": item.id, "method": name, "sample": sample, "labels": style,
                        "order": list(shown.order), "temperature": temperature, "max_tokens": args.max_tokens,
                        "finish_reason": choice.get("finish_reason"), "model": reply.get("model", args.model),
                        "latency_s": round(time.monotonic() - started, 2), "output": choice["message"]["content"],
                    }
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    out.flush()
                    written += 1
            print(f"item {number + 1}/{len(chosen)} (id {item.id}): {written} outputs", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
