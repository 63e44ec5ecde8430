/**
 * The web dashboard every node's gateway serves: the page ({@code /dashboard}: one HTML, one JS, one CSS file in the
 * jar, inline SVG plots, no framework) and the JSON it polls ({@code GET /api/v1/dashboard}, management token).
 *
 * <p><b>How the request series become cluster-wide.</b> Each node's {@code RequestSampler} reads the gateway's
 * existing {@code kiln.gateway.request.duration} timers once a second (nothing is added to the request path) and
 * keeps the second's difference — requests, errors, histogram bucket counts — in a ring of the last five minutes. The
 * node serving the page asks every live node over the event bus ({@code kiln.dashboard.series.<node>}) for the samples
 * it has not yet seen, adds them up per second, and reads p50/p99 from the summed buckets, so the percentiles are the
 * cluster's own. Nobody is asked anything while no page is open; polls close together share one read.
 *
 * <p><b>The token.</b> The page holds no data and is served to anyone; {@code /dashboard?token=T} hands it the token,
 * which it keeps in the tab's {@code sessionStorage}, removes from the address bar and sends only as
 * {@code Authorization: Bearer} on its own fetches. Its responses carry a strict Content-Security-Policy
 * ({@code 'self'} only) and {@code Referrer-Policy: no-referrer}.
 */
package io.kiln.gateway.dashboard;
