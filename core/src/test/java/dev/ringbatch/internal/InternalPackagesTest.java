package dev.ringbatch.internal;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static org.assertj.core.api.Assertions.assertThat;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The internal packages by owner (see docs/architecture.md), checked on the compiled classes: each package uses
 * only the packages below it, and no two packages use each other, directly or around a cycle.
 *
 * <pre>
 *   internal (assembly: DisruptorBatcher, ShardedBatcher)
 *     close    — the close, a script over what the consumer owns
 *     consume  — the consumer and what it owns until a hand-over: loop, pending batch, writers, completer
 *     ring     — the ring and its producers: publish gate, slots, room waiters, item futures
 *     pacing   — when to write: self-clock, spin hint, adaptive limits; plain numbers in, plain numbers out
 *     shared   — leaves: checks, causes, safe log, threads, backoff, guarded user hooks
 * </pre>
 */
class InternalPackagesTest {
  private static final String INTERNAL = "dev.ringbatch.internal";

  /** The compiled core classes, wherever they are: an empty import would let every rule pass on nothing. */
  private static final JavaClasses CORE = new ClassFileImporter().importPath(coreClasses());

  private static Path coreClasses() {
    try {
      return Path.of(DisruptorBatcher.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void theCheckReadsTheCoreClasses() {
    assertThat(CORE.contain(DisruptorBatcher.class)).as("classes imported from %s", coreClasses()).isTrue();
  }

  @Test
  void eachInternalPackageUsesOnlyThePackagesBelowIt() {
    layeredArchitecture()
        .consideringOnlyDependenciesInLayers()
        .layer("api").definedBy("dev.ringbatch", "dev.ringbatch.sink", "dev.ringbatch.stats")
        .layer("assembly").definedBy(INTERNAL)
        .layer("close").definedBy(INTERNAL + ".close")
        .layer("consume").definedBy(INTERNAL + ".consume")
        .layer("ring").definedBy(INTERNAL + ".ring")
        .layer("pacing").definedBy(INTERNAL + ".pacing")
        .layer("shared").definedBy(INTERNAL + ".shared")
        .whereLayer("assembly").mayOnlyBeAccessedByLayers("api")
        .whereLayer("close").mayOnlyBeAccessedByLayers("assembly")
        // the API's BatchSink.noResult/withResults build the consumer's ListSink, which reads the pending batch
        .whereLayer("consume").mayOnlyBeAccessedByLayers("api", "assembly", "close")
        .whereLayer("ring").mayOnlyBeAccessedByLayers("assembly", "close", "consume")
        .whereLayer("pacing").mayOnlyBeAccessedByLayers("assembly", "consume")
        .whereLayer("shared").mayOnlyBeAccessedByLayers("api", "assembly", "close", "consume", "ring", "pacing")
        .check(CORE);
  }

  @Test
  void internalPackagesHaveNoCycle() {
    slices().matching(INTERNAL + ".(**)").should().beFreeOfCycles().check(CORE);
  }

  @Test
  void everyInternalClassIsInAPackageByOwner() {
    classes()
        .that().resideInAPackage(INTERNAL + "..")
        .should().resideInAnyPackage(INTERNAL, INTERNAL + ".close", INTERNAL + ".consume", INTERNAL + ".ring",
            INTERNAL + ".pacing", INTERNAL + ".shared")
        .check(CORE);
  }
}
