/** The batch jobs REST API ({@code /api/v1/jobs}), mounted on the gateway's HTTP server beside the pipelines API. */
package io.kiln.gateway.job;
