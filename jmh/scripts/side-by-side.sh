#!/usr/bin/env bash
# Runs the same JMH selection on two builds of the benchmarks jar, alternating fork by fork (and which build goes first
# in each pair), so that both are measured in one run on the same machine state. Prints each fork's score and the
# median per build.
#
#   [JAVA=/path/to/bin/java] jmh/scripts/side-by-side.sh OLD.jar NEW.jar FORKS 'ThroughputBenchmark.offer$' -p target=ringbatch -t 1
#
# Build OLD.jar from another commit with: git worktree add /tmp/old <commit> &&
#   (cd /tmp/old && mvn -B -q package -Dmaven.test.skip=true -pl jmh -am)   # -> /tmp/old/jmh/target/benchmarks.jar
set -euo pipefail
old=$1; new=$2; forks=$3; shift 3
out=$(mktemp -d)
for fork in $(seq 1 "$forks"); do
  order="old new"; [ $((fork % 2)) = 0 ] && order="new old" # a machine that drifts within a pair favours neither build
  for build in $order; do
    jar=$old; [ "$build" = new ] && jar=$new
    "${JAVA:-java}" -jar "$jar" "$@" -f 1 -rf json -rff "$out/$build-$fork.json" > "$out/$build-$fork.log" 2>&1
  done
done
python3 - "$out" "$forks" <<'PY'
import json, statistics, sys, glob
out, forks = sys.argv[1], int(sys.argv[2])
rows = {}
for build in ("old", "new"):
    for fork in range(1, forks + 1):
        for r in json.load(open(f"{out}/{build}-{fork}.json")):
            key = r["benchmark"].split(".")[-1] + " " + ",".join(f"{k}={v}" for k, v in sorted(r.get("params", {}).items())) + f" t={r['threads']}"
            m = r["primaryMetric"]
            score = m["scorePercentiles"]["50.0"] if r["mode"] == "sample" else m["score"]
            rows.setdefault(key, {}).setdefault(build, []).append((score, m["scoreUnit"]))
for key, builds in sorted(rows.items()):
    o = [s for s, _ in builds.get("old", [])]; n = [s for s, _ in builds.get("new", [])]
    unit = builds["new"][0][1]
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"{key}: old median {mo:.4g} {unit} {['%.4g' % s for s in o]} | new median {mn:.4g} {unit} {['%.4g' % s for s in n]} | new/old {mn / mo:.2f}")
PY
