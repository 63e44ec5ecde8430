/** The pipelines REST API ({@code /api/v1/pipelines}) and the node cache's view ({@code /api/v1/cache}). */
package io.kiln.gateway.pipeline;
