package io.kiln.gateway.impl;

import io.kiln.pools.InferenceRequest;

/**
 * A request ready to route, with what the protocol layer needs to encode the answer.
 *
 * @param request the validated request the pool gets
 * @param header the request as decoded (parameters, per-output options)
 * @param rawInputs whether the inputs came as raw bytes (binary extension / raw_input_contents)
 */
record DecodedRequest(InferenceRequest request, RequestHeader header, boolean rawInputs) {
}
