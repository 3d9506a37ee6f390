"""A real allocation-heavy Python program for the main job: builds and
tears down dicts, lists, strings and JSON documents, then prints a checksum
so runs on different allocators can be compared."""
import hashlib
import json
import random

def main():
    rng = random.Random(42)
    digest = hashlib.sha256()
    for round_no in range(2):
        table = {}
        for i in range(150_000):
            key = f"key-{rng.randrange(1 << 30)}-{i}"
            table[key] = [rng.random() for _ in range(rng.randrange(1, 8))]
        docs = [json.dumps({"k": k, "v": v}) for k, v in list(table.items())[:40_000]]
        parsed = [json.loads(d) for d in docs]
        words = sorted(("".join(rng.choice("abcdefgh") for _ in range(12)) for _ in range(60_000)))
        digest.update(str(len(table)).encode())
        digest.update("".join(words[::997]).encode())
        digest.update(str(sum(len(p["v"]) for p in parsed)).encode())
        del table, docs, parsed, words
    print(digest.hexdigest())

if __name__ == "__main__":
    main()
