"""A moto S3 server that starts with the bounded-memory data set already in it (issue 13).

Usage: python3 s3_loaded_server.py HOST PORT [FILES]

Loading 100,000 objects into the test server through PUTs takes over half an
hour (it serves one request at a time, ADR 0091), so this fills moto's
in-process backend directly (`s3_backends[account]["global"].put_object`,
the same call its PUT handler ends in: same keys, ETags and listing) and
then serves that backend with the test server's own launcher
(`tests/s3/moto_server.py`, requests one at a time). 100,000 + 100,000
objects load in well under a minute.

moto answers each ListObjectsV2 page by scanning and sorting the whole bucket
(3.5 s a page at 200,000 keys: 6 minutes for one `ls` of 100 pages), so for
this bucket, which nothing changes once loaded, the listing is answered from
a sorted index of its key names instead: the same entries, order, page
sizes and continuation tokens (moto's own `_truncate_result` makes them),
found by bisection. Other buckets keep moto's listing. Only the server gets
faster; what burrow sends and receives is the same.

Bucket "bench13", keys as ObjectStoreBackend lays them out for tenant
"default" ({prefix}/default/{path}), the same files as
crates/burrow-cli/benches/bounded_memory.sh makes on disk:
  tree/default/d{d:04}/f{f:03}.txt  FILES/100 folders x 100 files of 5-6 lines;
                                    "zyzzogeton" in every 1,000th, "quick" in all
  flat/default/f{n:06}.txt          FILES files of 2 lines in one folder
FILES defaults to 100,000. Prints "loaded N objects in S s" once listening
is about to start; everything lives in memory and goes with the process.
"""

import os
import sys
import time
from bisect import bisect_left, bisect_right

from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import S3Backend, s3_backends

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "s3"))
import moto_server  # noqa: E402  (the test server's launcher, beside the tests)

BUCKET = "bench13"


def load(files: int) -> int:
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
    backend.create_bucket(BUCKET, "us-east-1")
    for n in range(files):
        d, f = divmod(n, 100)
        rare = "zyzzogeton\n" if n % 1000 == 0 else ""
        tree = f"file {n}\nthe quick brown fox\njumps over the lazy dog\n{rare}line four of {n}\nend\n"
        backend.put_object(BUCKET, f"tree/default/d{d:04}/f{f:03}.txt", tree.encode())
        backend.put_object(BUCKET, f"flat/default/f{n:06}.txt", f"file {n}\nthe quick brown fox\n".encode())
    return 2 * files


def index_listing(names: list[str]) -> None:
    """Answers ListObjectsV2 on BUCKET from `names` (sorted), as moto's scan would."""
    scan = S3Backend.list_objects_v2

    def listing(self, bucket, prefix, delimiter, continuation_token, start_after, max_keys):
        if bucket.name != BUCKET:
            return scan(self, bucket, prefix, delimiter, continuation_token, start_after, max_keys)
        prefix = prefix or ""
        after = self._pagination_tokens.get(continuation_token) if continuation_token else start_after
        i = bisect_left(names, prefix)
        if after:
            i = max(i, bisect_right(names, after))
        found = []
        # One more than a page, so moto's _truncate_result sees that more follow.
        while i < len(names) and names[i].startswith(prefix) and len(found) <= max_keys:
            rest = names[i][len(prefix):]
            if delimiter and delimiter in rest:
                folder = prefix + rest.split(delimiter)[0] + delimiter
                if not after or folder > after:
                    found.append(folder)
                # Past every key in the folder: they all sort below folder-without-delimiter + next char.
                i = bisect_left(names, folder[:-1] + chr(ord(delimiter[-1]) + 1))
            else:
                found.append(bucket.keys[names[i]])
                i += 1
        return self._truncate_result(found, max_keys)

    S3Backend.list_objects_v2 = listing


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    start = time.monotonic()
    count = load(files)
    index_listing(sorted(s3_backends[DEFAULT_ACCOUNT_ID]["global"].get_bucket(BUCKET).keys.keys()))
    print(f"loaded {count} objects in {time.monotonic() - start:.1f} s", flush=True)
    moto_server.serve(host, port)


if __name__ == "__main__":
    main()
