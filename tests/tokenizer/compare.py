#!/usr/bin/env python3
"""Compares `vkllm tokenize --jsonl` output with a reference .jsonl (same
line order; fields ids, ids_with_special, decoded). Prints the first
differences and "NAME: N passed, M failed"; exits 1 on any difference.
Usage: compare.py NAME REFERENCE.jsonl OUTPUT.jsonl"""
import json
import sys


def main():
    name, ref_path, out_path = sys.argv[1:4]
    ref = [json.loads(l) for l in open(ref_path, encoding="utf-8") if l.strip()]
    try:
        got = [json.loads(l) for l in open(out_path, encoding="utf-8") if l.strip()]
    except (OSError, ValueError) as e:
        print(f"  {name}: unreadable output: {e}")
        got = []
    ok = bad = 0
    for i, r in enumerate(ref):
        g = got[i] if i < len(got) else {}
        diff = [k for k in ("ids", "ids_with_special", "decoded") if g.get(k) != r[k]]
        if not diff:
            ok += 1
            continue
        bad += 1
        if bad <= 5:
            print(f"  {name} line {i + 1}: {', '.join(diff)} differ; text {r['text'][:80]!r}")
            for k in diff:
                print(f"    {k}: expected {str(r[k])[:200]}\n    {' ' * len(k)}  got      {str(g.get(k))[:200]}")
    print(f"{name}: {ok} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
