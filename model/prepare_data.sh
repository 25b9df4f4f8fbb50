#!/bin/sh
# Writes the training text of vkllm's bundled model from Debian's bible-kjv
# package (King James Version, public domain): model/data/kjv.txt (all verses),
# train.txt (training verses, chapters separated by an empty line) and
# heldout.txt (every 30th verse; committed, used for perplexity and tokenizer
# tests). Deterministic: the same package version gives the same bytes.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
data="$here/data"
export LC_ALL=C

if ! command -v bible >/dev/null 2>&1; then
    echo "prepare_data: installing bible-kjv (Debian package)" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bible-kjv >/dev/null
fi

mkdir -p "$data"
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
bible -f "Gen1:1-Rev22:21" >"$raw"

# Every line must be "<Book><chapter>:<verse> <text>" (e.g. "1Sam3:10 ..."),
# 31,102 verses in all; anything else means the package changed: stop.
n=$(wc -l <"$raw")
bad=$(grep -cvE '^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ ' "$raw" || true)
if [ "$n" -ne 31102 ] || [ "$bad" -ne 0 ]; then
    echo "prepare_data: unexpected bible output: $n lines (want 31102), $bad without a reference" >&2
    exit 1
fi

# Strip the reference, squeeze runs of spaces, trim. Verse i (0-based, in
# canonical order) is held out when i % 30 == 29: 1,036 verses spread over
# every book. Training verses keep their order; an empty line marks each new
# chapter (train.py turns it into </s>).
awk -v kjv="$data/kjv.txt" -v train="$data/train.txt" -v held="$data/heldout.txt" '
{
    ref = $1
    chap = ref; sub(/:[0-9]+$/, "", chap)
    text = $0
    sub(/^[^ ]+ +/, "", text)
    gsub(/  +/, " ", text)
    sub(/ +$/, "", text)
    print text > kjv
    if (NR % 30 == 0) {
        print text > held
    } else {
        if (ntrain > 0 && chap != lastchap) print "" > train
        print text > train
        ntrain++
        lastchap = chap
    }
}' "$raw"

for f in kjv.txt train.txt heldout.txt; do
    printf '%-12s %6d lines %8d bytes  sha256 %s\n' "$f" "$(wc -l <"$data/$f")" "$(wc -c <"$data/$f")" \
        "$(sha256sum "$data/$f" | cut -d' ' -f1)"
done
