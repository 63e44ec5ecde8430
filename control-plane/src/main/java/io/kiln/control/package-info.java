/**
 * Kiln's control plane over HTTP and gRPC: the REST APIs that change and read what the cluster serves, mounted on the
 * gateway's servers by the node ({@code deploy}'s {@code ServingNode}) through
 * {@link io.kiln.gateway.KilnGateway#addRoutes} and {@link io.kiln.gateway.KilnGateway#addGrpcServices}. The gateway
 * is the data plane and knows nothing of them; as DJL Serving keeps its {@code ManagementRequestHandler} apart from
 * its {@code InferenceRequestHandler}, here the two share the servers and ports and nothing else.
 * <ul>
 *   <li>{@link io.kiln.control.ManagementApi}: deployment files applied, deployments listed and deleted, the cluster's
 *       status ({@code /api/v1/deployments}, {@code /api/v1/status});</li>
 *   <li>{@link io.kiln.control.PipelineApi}: pipelines, their runs and events, the node cache
 *       ({@code /api/v1/pipelines}, {@code /api/v1/cache});</li>
 *   <li>{@link io.kiln.control.JobApi}: batch jobs ({@code /api/v1/jobs});</li>
 *   <li>{@link io.kiln.control.RepositoryApi} and {@link io.kiln.control.RepositoryGrpc}: the OIP model-repository
 *       extension ({@code /v2/repository/*}; gRPC {@code RepositoryIndex}, {@code RepositoryModelLoad},
 *       {@code RepositoryModelUnload}), whose index reads the controller's deployments and statuses;</li>
 *   <li>{@link io.kiln.control.DashboardApi}: the web dashboard ({@code /dashboard}) and the JSON it polls
 *       ({@code /api/v1/dashboard});</li>
 *   <li>{@link io.kiln.control.LogsApi}: any node's last log lines ({@code /api/v1/logs}), read from a
 *       {@link io.kiln.control.LogSource}.</li>
 * </ul>
 * They answer alike, through one helper ({@code impl.Answers}): JSON bodies, errors as {@code {"error": "..."}}, 400
 * with {@code problems} (file, line, column, path, message), 401 without the management token ({@code Authorization:
 * Bearer}, checked before a body is read), 404, 413 naming the limit, 503 with {@code Retry-After}.
 *
 * <p><b>The dashboard's request series.</b> Each node's sampler reads the gateway's existing
 * {@code kiln.gateway.request.duration} timers once a second (nothing is added to the request path) and keeps the
 * second's difference — requests, errors, histogram bucket counts — in a ring of the last five minutes. The node
 * serving the page asks every live node over the event bus ({@code kiln.dashboard.series.<node>}) for the samples it
 * has not yet seen, adds them up per second, and reads p50/p99 from the summed buckets, so the percentiles are the
 * cluster's own. Nobody is asked anything while no page is open; polls close together share one read.
 *
 * <p><b>The dashboard's token.</b> The page holds no data and is served to anyone; {@code /dashboard?token=T} hands it
 * the token, which it keeps in the tab's {@code sessionStorage}, removes from the address bar and sends only as
 * {@code Authorization: Bearer} on its own fetches. Its responses carry a strict Content-Security-Policy
 * ({@code 'self'} only) and {@code Referrer-Policy: no-referrer}.
 *
 * <p>Threading: every handler runs on the event loop of its request and never blocks (files are read on worker
 * threads, cluster state from the node's mirrors or by actor calls).
 */
package io.kiln.control;
