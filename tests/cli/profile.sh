#!/usr/bin/env bash
# vkbench --profile / --json / --svg / --prefill on the bundled model: on
# Vulkan (lavapipe in CI) the JSON holds the decode, prefill and per-op
# figures, the per-op times add up to the device's share of the step time,
# matmuls and attention have FLOPs, views move nothing, the slowest nodes
# are named, and the SVG is well-formed XML with a point per op; on cpu
# (the host clock around each op) the same table, JSON and SVG, the ops
# most of a step; on ref (no timestamps) --profile says why there is no
# table and exits 0. Exit 77 (skipped) without Vulkan, after the cpu and
# ref parts (with VKL_VK_DISABLE=timestamps the cpu backend, whose feature
# mask it is too, must say it has none). VKL_VK_PIPELINE_STATS=1 logs the
# driver's statistics or why it cannot.
# Usage: profile.sh VKBENCH MODEL.vkm
set -uo pipefail
vkbench=${1:?usage: profile.sh VKBENCH MODEL.vkm}
model=${2:?usage: profile.sh VKBENCH MODEL.vkm}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

"$vkbench" --decode "$model" --backend ref --tokens 3 --prefill 8 --profile --json "$tmp/ref.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "ref --profile: exit $?: $(cat "$tmp/err")"
grep -qF "per-op times need a backend with timestamps (vulkan, cpu)" "$tmp/out" || fail "ref --profile does not say why: $(cat "$tmp/out")"
python3 - "$tmp/ref.json" <<'PY' || fail "ref JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["backend"] == "ref" and r["decode"]["tokens"] == 3 and r["prefill"]["tokens"] == 8, r
assert "unavailable" in r["profile"] and "decode" not in r["profile"], r["profile"]
PY

"$vkbench" --decode "$model" --backend cpu --threads 2 --tokens 4 --prefill 8 --profile --json "$tmp/cpu.json" \
  --svg "$tmp/cpu.svg" >"$tmp/out" 2>"$tmp/err" || fail "cpu --profile: exit $?: $(cat "$tmp/err")"
# The timestamps feature turned off (VKL_VK_DISABLE=timestamps masks it on
# every backend, as its other features): the cpu backend must say so too.
if [[ ",${VKL_VK_DISABLE:-}," == *,timestamps,* ]]; then
  grep -qF "per-op times need a backend with timestamps" "$tmp/out" || fail "cpu, no timestamps, not said: $(cat "$tmp/out")"
else
  for s in "profile: timestamps on: the host clock read around each op" "decode profile:" "prefill profile:" \
    "QuantMatMul" "slowest nodes (ms per step):" "wrote $tmp/cpu.svg"; do
    grep -qF "$s" "$tmp/out" || fail "cpu: stdout lacks '$s': $(cat "$tmp/out")"
  done
  python3 - "$tmp/cpu.json" "$tmp/cpu.svg" <<'PY' || fail "cpu JSON / SVG"
import json, sys, xml.dom.minidom
r = json.load(open(sys.argv[1]))
assert r["backend"] == "cpu" and r["copy_bandwidth_gb_per_s"] > 0, r
for phase in ("decode", "prefill"):
    prof = r["profile"][phase]
    ops = {o["op"]: o for o in prof["ops"]}
    total = sum(o["ms"] for o in prof["ops"])
    assert abs(total - prof["op_ms"]) <= 1e-6 * prof["op_ms"], (phase, total, prof["op_ms"])
    # the host runs the ops, the step adds only its copies in and out
    assert 0.5 * prof["step_ms"] <= prof["op_ms"] <= 1.05 * prof["step_ms"], (phase, prof["op_ms"], prof["step_ms"])
    for op in ("QuantMatMul", "Attention", "KvAppend", "RMSNorm"):
        assert ops[op]["calls"] > 0 and ops[op]["ms"] > 0 and ops[op]["bytes"] > 0, (phase, ops[op])
    assert ops["Reshape"]["ms"] == 0 and ops["Reshape"]["bytes"] == 0, ops["Reshape"]  # a view: not run
    top = prof["top_nodes"]
    assert 1 <= len(top) <= 5 and all(a["ms"] >= b["ms"] for a, b in zip(top, top[1:])), top
svg = xml.dom.minidom.parse(sys.argv[2]).documentElement
assert svg.tagName == "svg" and len(svg.getElementsByTagName("circle")) >= 5, svg.tagName
PY
fi

if "$vkbench" --probe | grep -q '^vulkan: unavailable'; then
  echo "vulkan unavailable: skipped the Vulkan part"
  [ "$failed" -eq 0 ] && exit 77
  exit 1
fi
# Timestamps turned off (scripts/test runs the Vulkan tests under each kill
# switch): Vulkan then has no per-op times either, and must say so.
if [[ ",${VKL_VK_DISABLE:-}," == *,timestamps,* ]]; then
  "$vkbench" --decode "$model" --backend vulkan --tokens 3 --profile >"$tmp/out" 2>&1 || fail "vulkan, no timestamps: exit $?"
  grep -qF "per-op times need a backend with timestamps" "$tmp/out" || fail "no timestamps, not said: $(cat "$tmp/out")"
  exit $((failed > 0))
fi

echo '{}' >"$tmp/p.json" # replaced whole
"$vkbench" --decode "$model" --backend vulkan --tokens 16 --window 5 --prefill 32 --profile --json "$tmp/p.json" \
  --svg "$tmp/p.svg" >"$tmp/out" 2>"$tmp/err" || fail "vulkan --profile: exit $?: $(cat "$tmp/err")"
cat "$tmp/out"
for s in "prefill: 32 tokens" "decode profile:" "prefill profile:" "QuantMatMul" "compute peak: " \
  "slowest nodes (ms per step):" \
  "wrote $tmp/p.svg"; do
  grep -qF "$s" "$tmp/out" || fail "stdout lacks '$s'"
done
ls -A "$tmp" | grep -q '\.tmp-' && fail "a temporary file was left: $(ls -A "$tmp")"
python3 - "$tmp/p.json" "$tmp/p.svg" <<'PY' || fail "vulkan JSON / SVG"
import json, sys, xml.dom.minidom
r = json.load(open(sys.argv[1]))
for k in ("model", "backend", "device", "copy_bandwidth_gb_per_s", "compute_peak_gflop_per_s", "weight_bytes",
          "decode", "prefill", "profile"):
    assert k in r, "no key " + k
assert r["backend"] == "vulkan" and r["copy_bandwidth_gb_per_s"] > 0 and r["compute_peak_gflop_per_s"] > 0
d, p = r["decode"], r["prefill"]
assert d["tokens"] == 16 and d["tok_per_s"] > 0 and len(d["windows"]) == 3, d
assert p["tokens"] == 32 and p["ms"] > 0 and p["flops"] > 0 and p["gflop_per_s"] > 0, p
for phase in ("decode", "prefill"):
    prof = r["profile"][phase]
    ops = {o["op"]: o for o in prof["ops"]}
    for o in prof["ops"]:
        for k in ("calls", "ms", "bytes", "flops", "flop_per_byte", "gb_per_s", "gflop_per_s", "of_copy_bandwidth"):
            assert k in o, (phase, o["op"], k)
    total = sum(o["ms"] for o in prof["ops"])
    assert abs(total - prof["op_ms"]) <= 1e-6 * prof["op_ms"], (phase, total, prof["op_ms"])
    # the device's time is most of a step on lavapipe (the host's share is
    # small beside a CPU running the kernels), and never more than the step
    assert 0.3 * prof["step_ms"] <= prof["op_ms"] <= 1.05 * prof["step_ms"], (phase, prof["op_ms"], prof["step_ms"])
    for op in ("QuantMatMul", "Attention", "KvAppend", "RMSNorm"):
        assert ops[op]["calls"] > 0 and ops[op]["ms"] > 0 and ops[op]["bytes"] > 0, (phase, ops[op])
    assert ops["Reshape"]["bytes"] == 0 and ops["Reshape"]["flops"] == 0, ops["Reshape"]
    top = prof["top_nodes"]
    assert 1 <= len(top) <= 5 and all(t["name"] and t["op"] in ops for t in top), top
    assert all(a["ms"] >= b["ms"] for a, b in zip(top, top[1:])) and top[0]["ms"] <= ops[top[0]["op"]]["ms"], top
# A decode step's QuantMatMul: 2 FLOPs per weight read once, E0M4 at 4.5
# bits a weight (3.6 FLOP/B), a little less for the activations; a prefill
# of 32 rows reuses each weight 32 times.
qmm = {ph: [o for o in r["profile"][ph]["ops"] if o["op"] == "QuantMatMul"][0] for ph in ("decode", "prefill")}
assert 2.5 < qmm["decode"]["flop_per_byte"] < 3.6, qmm["decode"]
assert qmm["prefill"]["flop_per_byte"] > 8 * qmm["decode"]["flop_per_byte"], qmm
svg = xml.dom.minidom.parse(sys.argv[2]).documentElement
assert svg.tagName == "svg", svg.tagName
assert len(svg.getElementsByTagName("circle")) >= 5 and len(svg.getElementsByTagName("rect")) >= 5
PY

"$vkbench" --prefill 8 "$model" --backend vulkan >"$tmp/out" 2>"$tmp/err" || fail "--prefill alone: exit $?: $(cat "$tmp/err")"
grep -q "^prefill: 8 tokens, .* tok/s; .* GFLOP/s" "$tmp/out" || fail "--prefill alone: $(cat "$tmp/out")"

# VKL_VK_PIPELINE_STATS=1: each pipeline's driver statistics at info level,
# or a warning naming the missing extension (lavapipe 22.3 lacks it); the
# run itself unchanged.
VKL_VK_PIPELINE_STATS=1 VKLLM_LOG=info "$vkbench" --prefill 8 "$model" --backend vulkan >"$tmp/out" 2>"$tmp/err" ||
  fail "VKL_VK_PIPELINE_STATS=1: exit $?: $(cat "$tmp/err")"
grep -q "^prefill: 8 tokens" "$tmp/out" || fail "VKL_VK_PIPELINE_STATS=1: $(cat "$tmp/out")"
grep -qE "vulkan: pipeline [a-z0-9_]+ \[[0-9 ]*\] .*: |pipeline_stats: the device has no VK_KHR_pipeline_executable_properties" \
  "$tmp/err" || fail "VKL_VK_PIPELINE_STATS=1 logged neither statistics nor why: $(cat "$tmp/err")"

[ "$failed" -eq 0 ] && echo "profile: all passed"
[ "$failed" -eq 0 ]
