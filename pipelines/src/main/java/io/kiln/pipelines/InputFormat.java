package io.kiln.pipelines;

import com.fasterxml.jackson.annotation.JsonValue;

/** How an {@code infer} step turns a cached file into the deployment's input tensors. */
public enum InputFormat {
  /**
   * Raw little-endian elements of the model input's datatype, row-major; the batch (first) dimension is
   * the file size divided by one row's size, or, for an input with one variable dimension beside the first (an
   * encoded image as UINT8 {@code [-1, -1]}), one row the file fills along it. For a model with one input (or a named
   * {@code tensor}).
   */
  RAW("raw"),
  /** An Open Inference Protocol v2 JSON request ({@code {"inputs": [{name, datatype, shape, data}]}}). */
  OIP_JSON("oip_json");

  private final String spelling;

  InputFormat(String spelling) {
    this.spelling = spelling;
  }

  @JsonValue
  public String spelling() {
    return spelling;
  }
}
