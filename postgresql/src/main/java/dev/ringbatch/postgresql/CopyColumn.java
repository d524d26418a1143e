package dev.ringbatch.postgresql;

import java.util.function.Function;

/** One column of a {@link PgCopySink}: its name in the table, and the function that reads its value from an item. */
record CopyColumn<T>(String name, Function<? super T, ?> value) {}
