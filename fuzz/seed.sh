#!/usr/bin/env bash
# Builds fuzz/corpus/<target>/ (not committed) from the shared conformance
# vectors and the real-world wire corpus, plus the committed regression
# inputs. Usage: fuzz/seed.sh [SHARED_DIR]   (default: the nearest shared/
# above this checkout, as the tests find it).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
shared="${1:-}"
if [[ -z "$shared" ]]; then
  dir="$here"
  while [[ "$dir" != / ]]; do
    if [[ -d "$dir/shared/vectors" ]]; then shared="$dir/shared"; break; fi
    dir="$(dirname "$dir")"
  done
fi
[[ -d "$shared/vectors" ]] || { echo "seed.sh: no shared/vectors found; pass SHARED_DIR" >&2; exit 2; }

python3 - "$shared" "$here" <<'EOF'
import hashlib, json, os, sys

shared, here = sys.argv[1], sys.argv[2]
corpus = os.path.join(here, "corpus")
MAX = 4096  # seeds larger than this only slow the fuzzer down

def write(target, data):
    if len(data) > MAX:
        return
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()

def values_in(text):
    """Every JSON value of a file: one value, several in a row, or lines."""
    dec, i, out = json.JSONDecoder(), 0, []
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        try:
            v, i = dec.raw_decode(text, i)
        except ValueError:
            break
        out.append(v)
    return out

def objects(v):
    """Every object nested in v, outermost first."""
    if isinstance(v, dict):
        yield v
        for x in v.values():
            yield from objects(x)
    elif isinstance(v, list):
        for x in v:
            yield from objects(x)

files = []
for root in (os.path.join(shared, "vectors"), os.path.join(shared, "corpus")):
    for dirpath, _, names in os.walk(root):
        for n in sorted(names):
            if n.endswith((".json", ".jsonl")):
                files.append(os.path.join(dirpath, n))

all_objects, messages = [], []
for path in files:
    raw = open(path, "rb").read()
    text = raw.decode("utf-8", "replace")
    vals = values_in(text)
    for v in vals:
        for o in objects(v):
            all_objects.append(o)
            if isinstance(o.get("method"), str) and "params" in o:
                messages.append(o)
    # check and tap_framing see the files as they are.
    if "/corpus/" in path:
        for sel in (0, 4, 0x80):
            write("check", bytes([sel]) + raw[: MAX - 1])
        write("tap_framing", bytes([3, 128, 0, 7, 50, 200]) + raw[: MAX - 6])
        write("tap_framing", bytes([0, 255, 9]) + raw[: MAX - 3])

# state, watch and bridge: each corpus file as messages, one per line.
CLIENT_METHODS = {"initialize", "authenticate", "session/new", "session/load", "session/prompt",
                  "session/cancel", "session/set_mode", "_session/steering", "_session/goal"}
for path in files:
    if "/corpus/" not in path:
        continue
    raw = open(path, "rb").read()
    msgs = [o for v in values_in(raw.decode("utf-8", "replace")) for o in objects(v)
            if isinstance(o, dict) and o.get("jsonrpc") == "2.0"]
    lines = [compact(m) for m in msgs]
    # Who sent each: a call by its method, an answer by its request.
    sender, directed = {}, []
    for m, line in zip(msgs, lines):
        key = json.dumps(m.get("id"))
        if isinstance(m.get("method"), str):
            method = m["method"]
            side = b">" if method in CLIENT_METHODS or method.endswith(("/steer", "/get", "/list", "/read")) else b"<"
            sender[key] = side
        else:
            side = b"<" if sender.get(key, b">") == b">" else b">"
        directed.append(side + line)
    plain = b"\n".join(lines) + b"\n"
    arrows = b"\n".join(directed) + b"\n"
    for sel in (0, 0x80):
        write("state", bytes([sel]) + raw[: MAX - 1])
    for sel in (0x41, 0xC1):
        write("state", bytes([sel]) + plain[: MAX - 1])
        write("state", bytes([sel]) + arrows[: MAX - 1])
    write("watch", bytes([0, 0x85, 0, 4, 9, 10, 3, 90, 40]) + raw[: MAX - 9])
    write("watch", bytes([0, 5, 0, 4, 9, 10, 3, 90, 40]) + raw[: MAX - 9])
    write("watch", bytes([1, 3, 1, 5, 8, 60, 20]) + plain[: MAX - 7])
    for target in (0, 1, 2):
        write("bridge", bytes([target]) + arrows[: MAX - 1])

unique = list(dict.fromkeys(compact(o) for o in all_objects))
for i, body in enumerate(unique):
    # validate: every kind in turn (the first byte is taken modulo the kinds).
    write("validate", bytes([i % 256]) + body)
    # dispatch: as the params of every method in turn.
    write("dispatch", bytes([i % 65]) + body)
for m in messages:
    # dispatch: the message's own method (selector 65: method on the first line).
    write("dispatch", bytes([65]) + m["method"].encode() + b"\n" + compact(m["params"]))
    write("validate", bytes([0]) + compact(m))

# usage_fold: the accumulator vectors' steps as fold input.
for line in open(os.path.join(shared, "vectors", "usage-accumulator.jsonl"), encoding="utf-8"):
    v = json.loads(line)
    steps = b"".join(compact(s) + b"\n" for s in v["steps"])
    write("usage_fold", steps)
for line in open(os.path.join(shared, "vectors", "sum-model-usage.jsonl"), encoding="utf-8"):
    v = json.loads(line)
    write("usage_fold", compact({"sessionId": "s", "operationId": "op", "rows": v["rows"]}) + b"\n")

for target in os.listdir(os.path.join(here, "regressions")):
    src = os.path.join(here, "regressions", target)
    for n in os.listdir(src):
        data = open(os.path.join(src, n), "rb").read()
        d = os.path.join(corpus, target)
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb").write(data)

for t in sorted(os.listdir(corpus)):
    print(f"{t}: {len(os.listdir(os.path.join(corpus, t)))} seeds")
EOF
