#!/usr/bin/env python3
"""Checks our tokenizer against Python's tiktoken on a whole validation file.

    python3 tests/tiktoken_check.py --data DIR --val FILE [--field text]

DIR is a dataset directory written by prepare (tokenizer.tiktoken, val.bin,
val.idx, meta.json); FILE is the validation input it was prepared from. Loads
tokenizer.tiktoken into tiktoken with the split pattern recorded in meta.json,
encodes every validation document with encode_ordinary, prefixes BOS, and
asserts the ids equal the document's slice of val.bin. Prints the counts;
exits 1 naming the first differing document on any mismatch.
"""
import argparse
import array
import base64
import gzip
import json
import lzma
import os
import sys

NUM_LEARNED_TOKENS = 8188
VOCAB_SIZE = 8192


def open_text(path):
    """Opens FILE like prepare does: by extension, .xz/.gz/.zst, as UTF-8 text."""
    if path.endswith(".xz"):
        raw = lzma.open(path, "rb")
    elif path.endswith(".gz"):
        raw = gzip.open(path, "rb")
    elif path.endswith(".zst"):
        import zstandard  # only needed for .zst inputs

        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
    else:
        raw = open(path, "rb")
    return raw


def base_name(path):
    for ext in (".xz", ".gz", ".zst"):
        if path.endswith(ext):
            return path[: -len(ext)]
    return path


def read_documents(path, field):
    """Yields (line, text) in file order with prepare's rules (text_input.h)."""
    raw = open_text(path)
    data = raw.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    base = base_name(path)
    if base.endswith(".jsonl") or base.endswith(".json"):
        for n, line in enumerate(lines, 1):
            if not line.strip(b" \t\r"):
                continue
            text = json.loads(line.decode("utf-8"))[field]
            if text:
                yield n, text
    else:
        doc, start = [], 0
        for n, line in enumerate(lines, 1):
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line.strip(b" \t"):
                if doc:
                    yield start, "\n".join(doc)
                doc = []
                continue
            if not doc:
                start = n
            doc.append(line.decode("utf-8"))
        if doc:
            yield start, "\n".join(doc)


def load_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
            if int(rank) != n - 1:
                sys.exit(f"{path}:{n}: rank {int(rank)}, expected {n - 1}")
    return ranks


def read_array(path, typecode):
    a = array.array(typecode)
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="dataset directory written by prepare")
    ap.add_argument("--val", required=True, help="the validation input file it was prepared from")
    ap.add_argument("--field", default="text", help="JSON field of the documents (default: text)")
    args = ap.parse_args()

    import tiktoken

    with open(os.path.join(args.data, "meta.json")) as f:
        meta = json.load(f)
    pattern = meta["settings"]["split_pattern"]
    bos_id = meta["settings"]["bos_id"]
    ranks = load_ranks(os.path.join(args.data, "tokenizer.tiktoken"))
    if len(ranks) != NUM_LEARNED_TOKENS:
        sys.exit(f"tokenizer.tiktoken: {len(ranks)} distinct tokens, expected {NUM_LEARNED_TOKENS}")
    specials = {f"<|reserved_{k}|>": NUM_LEARNED_TOKENS + k for k in range(VOCAB_SIZE - NUM_LEARNED_TOKENS)}
    enc = tiktoken.Encoding(name="autoresearchd", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)

    tokens = read_array(os.path.join(args.data, "val.bin"), "H")
    offsets = read_array(os.path.join(args.data, "val.idx"), "Q")
    num_docs = len(offsets) - 1
    print(f"tiktoken {getattr(tiktoken, '__version__', '?')}; dataset {args.data}: {num_docs} validation documents, {len(tokens)} tokens")

    checked = mismatched = 0
    first = None
    for d, (line, text) in enumerate(read_documents(args.val, args.field)):
        if d >= num_docs:
            sys.exit(f"FAIL: {args.val} has more documents than val.idx ({num_docs})")
        ours = tokens[offsets[d] : offsets[d + 1]].tolist()
        theirs = [bos_id] + enc.encode_ordinary(text)
        checked += 1
        if ours != theirs:
            mismatched += 1
            if first is None:
                at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
                lo = max(0, at - 3)
                first = (
                    f"document {d} ({args.val}:{line}): first difference at token {at}; "
                    f"ours {ours[lo:at + 4]} ({enc.decode_bytes([t for t in ours[lo:at + 4] if t < NUM_LEARNED_TOKENS])!r}) "
                    f"tiktoken {theirs[lo:at + 4]} ({enc.decode_bytes([t for t in theirs[lo:at + 4] if t < NUM_LEARNED_TOKENS])!r}); "
                    f"lengths {len(ours)} vs {len(theirs)}"
                )
    if checked != num_docs:
        sys.exit(f"FAIL: {args.val} has {checked} documents, val.idx {num_docs}")
    print(f"checked {checked} documents, {len(tokens)} tokens: {checked - mismatched} identical, {mismatched} differ")
    if mismatched:
        print(f"FAIL: {first}")
        sys.exit(1)
    print("OK: tiktoken encodes every validation document to our ids")


if __name__ == "__main__":
    main()
