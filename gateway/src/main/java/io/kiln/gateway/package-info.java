/**
 * The Vert.x HTTP and gRPC front door, Kiln's data plane: Open Inference Protocol v2, OpenAI's API, routing by data
 * locality and load, admission control that sheds load with 503 + Retry-After, and Prometheus metrics. It knows
 * nothing of deployments, pipelines or jobs (it depends on neither {@code serve} nor {@code pipelines}); the control
 * plane's REST APIs (module {@code control-plane}, {@code io.kiln.control}) mount on its servers through
 * {@link io.kiln.gateway.KilnGateway#addRoutes} and {@link io.kiln.gateway.KilnGateway#addGrpcServices}.
 *
 * <p>Async types: handlers, servers and everything else inside this module that faces Vert.x use Vert.x
 * {@code Future}s. What the gateway calls in other modules (pools, the runtime) and what
 * it offers them ({@link io.kiln.gateway.KilnGateway#start}, {@link io.kiln.gateway.KilnGateway#close}) is a
 * {@link java.util.concurrent.CompletionStage}. A handler converts once, where the two meet, and gets at a
 * failure's real cause with {@link io.kiln.runtime.Futures#unwrap}. The rule, in full, is in the runtime's
 * package documentation ({@code io.kiln.runtime}).
 */
package io.kiln.gateway;
