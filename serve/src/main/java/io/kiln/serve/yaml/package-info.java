/**
 * Reading YAML with positions: composing a document under size and alias limits ({@link
 * io.kiln.serve.yaml.YamlDocuments}), typed field reads that report every problem with its line, column and
 * schema path ({@link io.kiln.serve.yaml.Reading}, {@link io.kiln.serve.yaml.MappingReader},
 * {@link io.kiln.serve.yaml.Problems}) and "did you mean" suggestions. Deployment files are read with it, and
 * so are the sections other modules add to them (the pipelines module's {@code pipelines:}). Not thread-safe:
 * one {@code Problems} per document.
 */
package io.kiln.serve.yaml;
