package dev.ringbatch.internal.consume;

/**
 * Unwinds the consumer loop when it must stop touching its holdings: {@link #TAKEN}, a close took them while
 * the consumer was in user code; {@link #YIELD}, a close asked for them and the consumer is to hand them over
 * ({@link HandOver#yieldToClose()}). Preallocated, without a stack trace: control flow, not an error.
 */
public final class ConsumerStop extends RuntimeException {
  private static final long serialVersionUID = 1L;

  static final ConsumerStop TAKEN = new ConsumerStop("a close took over while the consumer was in user code");
  public static final ConsumerStop YIELD = new ConsumerStop("a close asked the consumer to hand over");

  private ConsumerStop(String message) {
    super(message, null, false, false);
  }
}
