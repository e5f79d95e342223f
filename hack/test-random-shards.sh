#!/usr/bin/env bash
# Plays seeds FIRST .. FIRST+COUNT-1 of the randomized harness
# (test/integration/random) in SHARDS processes at once, each with its own
# control plane and consecutive seeds. A seed spends most of its time
# waiting for the scenario's clock and the scheduler (measured: about 0.3
# of one core, the machine 75-80% idle with two shards on 2 cores), so two
# shards halve the time without bending the harness's time bounds. Each
# shard's whole output goes
# to LOGS/shard-K.log; the failed seeds are listed at the end with their
# replay lines.
set -euo pipefail
first=$1 count=$2 shards=$3 logs=$4
mkdir -p "$logs"
bin="$logs/random.test"
go test -c -o "$bin" ./test/integration/random/
per=$(( (count + shards - 1) / shards ))
pids=()
ranges=()
for ((k = 0; k < shards; k++)); do
	from=$(( first + k * per ))
	n=$(( first + count - from ))
	(( n > per )) && n=$per
	(( n > 0 )) || continue
	echo "shard $k: seeds $from .. $(( from + n - 1 )) -> $logs/shard-$k.log"
	ranges[k]="$from-$(( from + n - 1 ))"
	(cd test/integration/random && CALDERA_KEEP_LOGS="$logs" "$bin" -test.run '^TestRandom$' -test.v -test.count=1 \
		-test.timeout "$(( n * 3 + 5 ))m" -random.seed="$from" -random.seeds="$n") >"$logs/shard-$k.log" 2>&1 &
	pids+=("$!")
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
passed=$({ grep -h -- '--- PASS: TestRandom/seed=' "$logs"/shard-*.log || true; } | wc -l)
# grep finds nothing when every seed passed: not an error here.
failed=$({ grep -h -- '--- FAIL: TestRandom/seed=' "$logs"/shard-*.log || true; } | sed 's/.*seed=\([0-9]*\).*/\1/' | sort -n | tr '\n' ' ')
echo "test-random: $passed passed, $(wc -w <<<"$failed") failed${failed:+: seeds $failed}"
for s in $failed; do
	echo "  replay: make test-random SEEDS=1 SEED=$s"
done
# The next run overwrites shard-K.log; a shard that failed keeps a copy
# named by its seeds, with the cache view the harness logs at a violation.
for k in "${!ranges[@]}"; do
	if grep -q -- '--- FAIL: TestRandom/seed=' "$logs/shard-$k.log"; then
		cp "$logs/shard-$k.log" "$logs/failed-seeds-${ranges[$k]}.log"
		echo "  kept: $logs/failed-seeds-${ranges[$k]}.log"
	fi
done
exit $rc
