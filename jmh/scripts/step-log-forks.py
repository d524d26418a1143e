#!/usr/bin/env python3
"""Fork by fork figures of an AdaptiveLimitsBenchmark step log (-Dringbatch.jmh.steps=FILE), which the reports'
tables reduce to medians: per configuration and cell, the number of forks, the median, the slowest and the fastest
fork's calls/s (each fork's mean over its measured iterations).

usage: step-log-forks.py STEP_LOG [SPLIT_LABELS...]
The log's keys do not name the JVM. A report that ran JVMs in turn (DefaultsReport: Temurin 25's platform and virtual
callers, then JDK 17's platform callers) starts a new JVM where a platform key follows a virtual one; SPLIT_LABELS
name the parts in order (default: "JDK 25" "JDK 17")."""
import collections
import statistics
import sys

labels = sys.argv[2:] or ["JDK 25", "JDK 17"]
part, seen_virtual = 0, False
runs = collections.OrderedDict()
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 6:
        continue
    if "/virtual/" in f[0]:
        seen_virtual = True
    elif seen_virtual and "/platform/" in f[0]:
        part, seen_virtual = part + 1, False
    if f[3] != "measure":
        continue
    config = f[0].replace("c=500ns/", "")
    config = config.split("/defaults")[0] + "/nothing set" if "/defaults" in config else config
    key = (labels[min(part, len(labels) - 1)], config, int(f[4]))
    runs.setdefault(key, collections.OrderedDict()).setdefault(f[1], []).append(float(f[5]))
print(f"{'JVM':7} {'configuration':52} {'K':>6} {'forks':>5} {'median':>9} {'min':>9} {'max':>9}")
for (jvm, config, k), forks in runs.items():
    means = [statistics.mean(v) for v in forks.values()]
    print(f"{jvm:7} {config:52} {k:6d} {len(means):5d} {statistics.median(means):9.0f} {min(means):9.0f} "
          f"{max(means):9.0f}")
