/**
 * A load generator that measures honestly: open-loop arrival rates timed from the intended send time
 * (no coordinated omission) and closed-loop connections, over HTTP JSON, HTTP binary tensors and gRPC,
 * with HdrHistogram percentiles, JSON summaries and HTML reports. It is a client only.
 */
package io.kiln.loadtest;
