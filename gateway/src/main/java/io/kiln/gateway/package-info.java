/**
 * The Vert.x HTTP and gRPC front door: Open Inference Protocol v2, routing by data locality and load,
 * admission control that sheds load with 503 + Retry-After, Prometheus metrics and the management
 * REST API.
 */
package io.kiln.gateway;
