package io.kiln.gateway.impl;

import io.kiln.pools.ValidatedRequest;

/**
 * A request ready to route, with what the protocol layer needs to encode the answer.
 *
 * @param request the request the pool gets, validated against the model's signature
 * @param header the request as decoded (parameters, per-output options)
 * @param rawInputs whether the inputs came as raw bytes (binary extension / raw_input_contents)
 */
record DecodedRequest(ValidatedRequest request, RequestHeader header, boolean rawInputs) {
}
