#!/bin/sh
# Peak RSS of `burrow ls`, `glob` and `grep` with --limit 100 over 100,000 objects on S3
# (issue 13); see docs/benchmarks.md, "Bounded memory". The object-store rows of
# crates/burrow-cli/benches/bounded_memory.sh, at the full size.
#
#   crates/burrow-object-store/benches/bounded_memory_s3.sh BURROW [BURROW...]
#
# Starts s3_loaded_server.py (moto with bucket "bench13" filled in-process: 100,000
# objects under tree/ and 100,000 under flat/, loaded in about a minute instead of the
# hour PUTs take) on PORT (default 9391), measures, and stops it. Each case runs RUNS
# times (default 3); the median "Maximum resident set size" and wall time are printed,
# with the exit code of the last run. CASES (default "ls glob grep-common") picks the
# cases; "grep-rare" (100,000 GETs, about 20 minutes a run on moto) is left out unless
# named. Needs /usr/bin/time (Debian package `time`) and BURROW_S3_PYTHON (or python3)
# with moto (`cargo xtask setup` installs it).
set -eu
runs=${RUNS:-3}
port=${PORT:-9391}
files=${FILES:-100000}
cases=${CASES:-ls glob grep-common}
python=${BURROW_S3_PYTHON:-python3}
here=$(dirname "$0")

out=$(mktemp -d)
"$python" "$here/s3_loaded_server.py" 127.0.0.1 "$port" "$files" >"$out/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
until grep -q "Running on" "$out/server.log"; do
    kill -0 "$server" 2>/dev/null || { cat "$out/server.log"; exit 1; }
    sleep 1
done
sed -n 1p "$out/server.log"

export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=burrow-test AWS_SECRET_ACCESS_KEY=burrow-test

# measure NAME BURROW ARGS...: median peak RSS (KiB) and wall time of RUNS runs.
measure() {
    name=$1
    bin=$2
    shift 2
    rss=""
    wall=""
    for _ in $(seq "$runs"); do
        /usr/bin/time -v -o "$out/t" "$bin" "$@" >"$out/o" 2>"$out/e" </dev/null && code=0 || code=$?
        rss="$rss $(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/t")"
        wall="$wall $(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$out/t")"
    done
    med_rss=$(printf '%s\n' $rss | sort -n | sed -n "$(((runs + 1) / 2))p")
    med_wall=$(printf '%s\n' $wall | sort | sed -n "$(((runs + 1) / 2))p")
    printf '%-28s %-40s %8s MiB %10s  exit %s  (%s lines out)\n' "$name" "$bin" \
        "$(echo "$med_rss" | awk '{printf "%.1f", $1 / 1024}')" "$med_wall" "$code" \
        "$(wc -l <"$out/o")"
    [ "$code" = 0 ] || sed -n 1p "$out/e" | cut -c1-150
}

for bin in "$@"; do
    for case in $cases; do
        case $case in
        ls) measure "s3 ls flat" "$bin" --backend s3://bench13/flat ls / --limit 100 ;;
        glob) measure "s3 glob **/*.txt" "$bin" --backend s3://bench13/tree glob '**/*.txt' --limit 100 ;;
        grep-common) measure "s3 grep quick (common)" "$bin" --backend s3://bench13/tree grep quick --limit 100 ;;
        grep-rare) measure "s3 grep zyzzogeton (rare)" "$bin" --backend s3://bench13/tree grep zyzzogeton --limit 100 ;;
        *) echo "unknown case $case (ls, glob, grep-common, grep-rare)" >&2; exit 2 ;;
        esac
    done
done
