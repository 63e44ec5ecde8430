/**
 * The model spec's schema, declared once: {@link io.kiln.pools.spec.ModelFields} lists every field of
 * {@link io.kiln.pools.ModelSpec} with its YAML name, kind, default, owner and one-line doc. The event-bus wire form
 * ({@code PoolsJacksonModule}), serve's YAML reader and JSON writer, {@link io.kiln.pools.ModelSpec.Builder} and the
 * field table of docs/yaml.md ({@link io.kiln.pools.spec.ModelFieldsTable}) walk this list instead of naming the
 * fields each on its own.
 */
package io.kiln.pools.spec;
