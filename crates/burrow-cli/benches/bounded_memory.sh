#!/bin/sh
# Peak RSS of `burrow ls`, `glob` and `grep` with --limit 100 over 100,000 files, and of
# `burrow write` of a 1 GiB input (issue 13); see docs/benchmarks.md, "Bounded memory".
#
#   crates/burrow-cli/benches/bounded_memory.sh DATA_DIR BURROW [BURROW...]
#
# DATA_DIR is made once (about 1.8 GB, minutes on a busy disk) and reused:
#   DATA_DIR/tree/   1,000 folders x 100 files of 5-6 lines; the rare word "zyzzogeton"
#                    is in every 1,000th file (100 files), "quick" in every file
#   DATA_DIR/flat/   100,000 files of 2 lines directly in one folder (for ls)
#   DATA_DIR/big.bin 1 GiB of zeros
# With BURROW_BENCH_S3=ENDPOINT (the moto server of `cargo xtask setup`) it also loads
# bucket "bench13" with S3_DIRS x 100 objects under tree/ and as many under flat/
# (S3_DIRS defaults to 100: 10,000 objects each) and measures ls, glob and grep there.
# Each case runs RUNS times (default 3); the median of "Maximum resident set size" and
# of the wall time is printed, with the exit code of the last run.
# Needs /usr/bin/time (Debian package `time`) and python3 (boto3 for S3).
set -eu
data=$1
shift
runs=${RUNS:-3}

if [ ! -d "$data/tree" ]; then
    mkdir -p "$data"
    python3 - "$data" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(1000):
    dd = f"{root}/tree/d{d:04}"
    os.makedirs(dd, exist_ok=True)
    for f in range(100):
        n = d * 100 + f
        rare = "zyzzogeton\n" if n % 1000 == 0 else ""
        with open(f"{dd}/f{f:03}.txt", "w") as fh:
            fh.write(f"file {n}\nthe quick brown fox\njumps over the lazy dog\n{rare}line four of {n}\nend\n")
os.makedirs(f"{root}/flat", exist_ok=True)
for n in range(100000):
    with open(f"{root}/flat/f{n:06}.txt", "w") as fh:
        fh.write(f"file {n}\nthe quick brown fox\n")
PY
fi
[ -f "$data/big.bin" ] || head -c 1G /dev/zero >"$data/big.bin"

if [ -n "${BURROW_BENCH_S3:-}" ] && [ ! -f "$data/s3-loaded" ]; then
    python3 - "$BURROW_BENCH_S3" "${S3_DIRS:-100}" <<'PY'
# Keys as ObjectStoreBackend lays them out for tenant "default": {prefix}/default/{path}.
import sys, boto3
from concurrent.futures import ThreadPoolExecutor
endpoint, ndirs = sys.argv[1], int(sys.argv[2])
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="burrow-test", aws_secret_access_key="burrow-test")
try:
    s3.create_bucket(Bucket="bench13")
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
jobs = []
for d in range(ndirs):
    for f in range(100):
        n = d * 100 + f
        rare = "zyzzogeton\n" if n % 1000 == 0 else ""
        jobs.append((f"tree/default/d{d:04}/f{f:03}.txt",
                     f"file {n}\nthe quick brown fox\njumps over the lazy dog\n{rare}line four of {n}\nend\n"))
        jobs.append((f"flat/default/f{n:06}.txt", f"file {n}\nthe quick brown fox\n"))
with ThreadPoolExecutor(4) as ex:
    list(ex.map(lambda j: s3.put_object(Bucket="bench13", Key=j[0], Body=j[1].encode()), jobs))
PY
    touch "$data/s3-loaded"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# measure NAME STDIN BURROW ARGS...: median peak RSS (KiB) and wall time of RUNS runs.
measure() {
    name=$1
    input=$2
    bin=$3
    shift 3
    rss=""
    wall=""
    for _ in $(seq "$runs"); do
        rm -rf "$out/w"
        if [ "$input" = zero ]; then
            head -c 1G /dev/zero | /usr/bin/time -v -o "$out/t" "$bin" "$@" >/dev/null 2>"$out/e" && code=0 || code=$?
        else
            /usr/bin/time -v -o "$out/t" "$bin" "$@" >/dev/null 2>"$out/e" </dev/null && code=0 || code=$?
        fi
        rss="$rss $(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/t")"
        wall="$wall $(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$out/t")"
    done
    med_rss=$(printf '%s\n' $rss | sort -n | sed -n "$(((runs + 1) / 2))p")
    med_wall=$(printf '%s\n' $wall | sort | sed -n "$(((runs + 1) / 2))p")
    printf '%-28s %-40s %8s MiB %10s  exit %s\n' "$name" "$bin" \
        "$(echo "$med_rss" | awk '{printf "%.1f", $1 / 1024}')" "$med_wall" "$code"
    [ "$code" = 0 ] || sed -n 1p "$out/e" | cut -c1-150
}

for bin in "$@"; do
    measure "fs ls flat" none "$bin" --backend "fs:$data/flat" ls / --limit 100
    measure "fs glob **/*.txt" none "$bin" --backend "fs:$data/tree" glob '**/*.txt' --limit 100
    measure "fs grep quick (common)" none "$bin" --backend "fs:$data/tree" grep quick --limit 100
    measure "fs grep zyzzogeton (rare)" none "$bin" --backend "fs:$data/tree" grep zyzzogeton --limit 100
    measure "fs write 1 GiB file" none "$bin" --backend "fs:$out/w" write /big.bin "$data/big.bin"
    measure "fs write 1 GiB stdin" zero "$bin" --backend "fs:$out/w" write /big.bin -
    if [ -n "${BURROW_BENCH_S3:-}" ]; then
        export AWS_ENDPOINT_URL="$BURROW_BENCH_S3" AWS_ALLOW_HTTP=true AWS_REGION=us-east-1 \
            AWS_ACCESS_KEY_ID=burrow-test AWS_SECRET_ACCESS_KEY=burrow-test
        measure "s3 ls flat" none "$bin" --backend s3://bench13/flat ls / --limit 100
        measure "s3 glob **/*.txt" none "$bin" --backend s3://bench13/tree glob '**/*.txt' --limit 100
        measure "s3 grep quick (common)" none "$bin" --backend s3://bench13/tree grep quick --limit 100
        measure "s3 grep zyzzogeton (rare)" none "$bin" --backend s3://bench13/tree grep zyzzogeton --limit 100
    fi
done
