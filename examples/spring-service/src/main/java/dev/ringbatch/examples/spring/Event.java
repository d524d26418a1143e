package dev.ringbatch.examples.spring;

/** An event posted to the service. */
public record Event(long id, String payload) {}
