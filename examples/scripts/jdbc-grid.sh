#!/usr/bin/env bash
# The JDBC demo over the grid of callers, each cell in its own JVM, ringbatch against the hand-written queue
# batchers and the fitted bound in every run (see JdbcDemo). Each cell runs ROUNDS timed rounds of the batched runs
# in one JVM, their order rotating from round to round, after a warm-up (BatchedRuns); its figures are the medians
# of those rounds. Prints every RESULT line, then a table of them (medians again if JVMS > 1):
#
#   examples/scripts/jdbc-grid.sh ROUNDS JAVA_HOME...   e.g. examples/scripts/jdbc-grid.sh 3 /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64
#   JVMS=2 examples/scripts/jdbc-grid.sh 3 ...           two JVMs per cell
#
# Virtual-thread cells run only on JDK 21+. About 25 minutes for 3 rounds, JDK 17 and 25, on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=$1; shift
mvn -q -B package -DskipTests -pl examples -am
mvn -q -B dependency:build-classpath -pl examples -am -Dmdep.outputFile="$PWD/examples/target/grid.classpath" > /dev/null
cp="examples/target/classes:$(cat examples/target/grid.classpath)"
out=$(mktemp)
cell() { # $1 java home, $2 label, $3 round, rest: demo options
  local home=$1 label=$2 round=$3; shift 3
  "$home/bin/java" -cp "$cp" dev.ringbatch.examples.Demo jdbc --rounds "$rounds" "$@" 2>&1 | grep '^RESULT' \
    | sed "s/^/$(basename "$home") $label round $round: /" | tee -a "$out"
}
for round in $(seq 1 "${JVMS:-1}"); do
  for home in "$@"; do
    cell "$home" p16 "$round" --callers 16 --rows 200000
    cell "$home" p64 "$round" --callers 64 --rows 400000
    cell "$home" p256 "$round" --callers 256 --rows 400000
    cell "$home" p64-bad1 "$round" --callers 64 --rows 400000 --bad-percent 1
    if [ "$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release")" -ge 21 ]; then
      cell "$home" v256 "$round" --callers 256 --threads virtual --rows 400000
      cell "$home" v2000 "$round" --callers 2000 --threads virtual --rows 800000
      cell "$home" v10000 "$round" --callers 10000 --threads virtual --rows 800000
      cell "$home" v2000-bad1 "$round" --callers 2000 --threads virtual --rows 800000 --bad-percent 1
    fi
  done
done
python3 - "$out" <<'PY'
import collections, re, statistics, sys
cells = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r'(\S+) (\S+) round \d+: RESULT \w+ (.*)', line)
    if m:
        cells[(m.group(1), m.group(2))].append(dict(kv.split('=', 1) for kv in m.group(3).split()))
keys = [('unbatched_rows_per_s', 'unbatched'), ('batched_rows_per_s', 'ringbatch'), ('queue_copy_rows_per_s', 'queue+COPY'),
        ('queue_rewrite_rows_per_s', 'queue+rewrite'), ('bound_rows_per_s', 'bound'), ('vs_best_queue', 'vs best queue'),
        ('vs_bound', 'vs bound'), ('mean_batch', 'batch'), ('queue_copy_batch', 'q+COPY batch'), ('queue_rewrite_batch', 'q+rewr batch')]
print('medians | jdk | cell | runs | ' + ' | '.join(label for _, label in keys))
for (jdk, cell), runs in cells.items():
    med = [statistics.median(float(r[k]) for r in runs) for k, _ in keys]
    print(f'medians | {jdk} | {cell} | {len(runs)} | ' + ' | '.join(f'{v:.2f}' if v < 10 else f'{v:,.0f}' for v in med))
PY
