#!/usr/bin/env bash
# The scheduler scenarios at 1, 2, 4, ... up to the machine's CPUs workers
# (stepsched and tokio with the same count), one batch, one table: the
# scaling measurement of docs/ARCHITECTURE.md ("Measuring it on a larger
# machine"). Runs unchanged on any Linux machine.
#
#   benches/peers/sweep.sh                     # ROUNDS=5, SCALE=1
#   ROUNDS=3 SCALE=0.2 benches/peers/sweep.sh  # quicker
#   MAX_WORKERS=8 benches/peers/sweep.sh       # stop at 8
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p stepsched-peers --bin scheduler
bin=target/release/scheduler
cpus=$(nproc)
max=${MAX_WORKERS:-$cpus}
counts=(1)
n=2
while [ "$n" -le "$max" ]; do counts+=("$n"); n=$((n * 2)); done
if [ "${counts[-1]}" -ne "$max" ] && [ "$max" -gt 1 ]; then counts+=("$max"); fi
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.arena_max=1}
export ROUNDS=${ROUNDS:-5} SCALE=${SCALE:-1} RESOURCES=off
echo "machine: $cpus CPUs; workers: ${counts[*]}; ROUNDS=$ROUNDS SCALE=$SCALE"
printf '%-8s %-16s %12s %12s %8s\n' workers scenario tokio stepsched ratio
for w in "${counts[@]}"; do
    WORKERS=$w "$bin" | awk -v w="$w" '
        $1 ~ /^(spawn_many|chained_spawn|yield_many|ping_pong|fan_out_fan_in)$/ {
            # the last five fields: tokio (value unit) stepsched (value unit) ratio
            printf "%-8s %-16s %9s %-2s %9s %-2s %8s\n", w, $1, $(NF-4), $(NF-3), $(NF-2), $(NF-1), $NF
        }'
done
