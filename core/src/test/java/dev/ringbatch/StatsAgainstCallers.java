package dev.ringbatch;

import java.util.EnumMap;
import java.util.Map;

/**
 * The invariant that a batcher's counts tell what its callers were told: once every future completed, each of
 * {@link BatcherStats}' outcome categories holds the items whose callers were told it, give or take the items
 * whose callers could not be told (an {@code offer}'s, a wait that ran out or was interrupted). A caller told
 * "written" counted failed, or a rejection counted under another reason, is a wrong report the balance of the
 * counts alone does not show.
 */
final class StatsAgainstCallers {
  enum Told { WRITTEN, FAILED, ABANDONED, FULL, TIMEOUT, INTERRUPTED, CLOSED }

  private final Map<Told, Long> known = new EnumMap<>(Told.class);
  /** Per category, how many items may be in it without their caller having been told so. */
  private final Map<Told, Long> possible = new EnumMap<>(Told.class);

  private StatsAgainstCallers() {
    for (Told t : Told.values()) {
      known.put(t, 0L);
      possible.put(t, 0L);
    }
  }

  /** Checks {@code stats} against what {@code submissions}' callers were told; every future must be done. */
  static void check(HookRound round, BatcherStats stats) {
    StatsAgainstCallers c = new StatsAgainstCallers();
    for (HookRound.Submission s : round.byId.values()) {
      c.add(s, round.successesOf(s.id) > 0);
    }
    Map<Told, Long> counted = new EnumMap<>(Told.class);
    counted.put(Told.WRITTEN, stats.written());
    counted.put(Told.FAILED, stats.failed());
    counted.put(Told.ABANDONED, stats.abandoned());
    counted.put(Told.FULL, stats.rejected(RejectionReason.FULL));
    counted.put(Told.TIMEOUT, stats.rejected(RejectionReason.TIMEOUT));
    counted.put(Told.INTERRUPTED, stats.rejected(RejectionReason.INTERRUPTED));
    counted.put(Told.CLOSED, stats.rejected(RejectionReason.CLOSED));
    for (Told t : Told.values()) {
      long low = c.known.get(t);
      long high = low + c.possible.get(t);
      long n = counted.get(t);
      if (n < low || n > high) {
        round.violation("stats-" + t.name().toLowerCase(java.util.Locale.ROOT) + "-not-what-callers-were-told",
            "stats count " + n + " where callers were told " + low + (high > low ? " (up to " + high
                + " with the items whose callers could not be told)" : "") + ": " + stats + "; told " + c.known
                + ", untold " + c.possible);
      }
    }
  }

  private void add(HookRound.Submission s, boolean sinkRecordedWritten) {
    if (s.origin.contains("(threw")) {
      return; // the weigher threw: never reached the ring, counted nowhere
    }
    if (s.future == null) { // an offer: its caller learns only whether it was taken
      if (s.accepted && sinkRecordedWritten) {
        maybe(Told.WRITTEN, Told.FAILED, Told.ABANDONED); // failed: outcome unknown; abandoned: by a close
      } else if (s.accepted) {
        maybe(Told.FAILED, Told.ABANDONED);
      } else {
        maybe(Told.FULL, Told.TIMEOUT, Told.INTERRUPTED, Told.CLOSED);
      }
      return;
    }
    Throwable cause = HookRound.failureOf(s.future);
    if (s.origin.endsWith("submitAndWait") && cause != null && isHarnessWord(cause)) {
      maybe(Told.values()); // the wait ended without the batcher's word (or never called it)
      return;
    }
    if (cause == null) {
      known.merge(Told.WRITTEN, 1L, Long::sum);
    } else if (cause instanceof BatcherFullException full) {
      known.merge(switch (full.reason()) {
        case FULL -> Told.FULL;
        case TIMEOUT -> Told.TIMEOUT;
        case INTERRUPTED -> Told.INTERRUPTED;
        case CLOSED -> Told.CLOSED;
      }, 1L, Long::sum);
    } else if (cause instanceof BatcherClosedException closed) {
      known.merge(closed.isAbandoned() ? Told.ABANDONED : Told.CLOSED, 1L, Long::sum);
    } else {
      known.merge(Told.FAILED, 1L, Long::sum);
    }
  }

  /** What HookRound told in place of a waiting caller that got no outcome from the batcher. */
  private static boolean isHarnessWord(Throwable cause) {
    String m = String.valueOf(cause.getMessage());
    return m.startsWith("hookchaos:") || m.contains("refused on the consumer");
  }

  private void maybe(Told... ts) {
    for (Told t : ts) {
      possible.merge(t, 1L, Long::sum);
    }
  }
}
