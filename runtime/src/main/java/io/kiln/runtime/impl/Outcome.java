package io.kiln.runtime.impl;

/** What a constructor or method produced: a value or a throwable, carried back to the actor's event loop. */
record Outcome(Object value, Throwable error) {
}
