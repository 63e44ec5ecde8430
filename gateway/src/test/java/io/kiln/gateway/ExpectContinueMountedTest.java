package io.kiln.gateway;

import static io.kiln.gateway.support.RawHttp.head;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.RawHttp;
import io.kiln.gateway.support.RawHttp.Answer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * {@code Expect: 100-continue} on routes mounted on the gateway's router the way the control plane's APIs are (a
 * sub-router behind a {@link BearerToken} check answering 401, each body route reading through
 * {@link RequestBodies#upTo} with a limit of its own): the body is invited once the token and the declared length
 * pass, and refused unsent, closing the connection, when either fails; a 413 names the route's own limit.
 */
class ExpectContinueMountedTest extends GatewayTestBase {

  static final String TOKEN = "s3cret";
  static final int LIMIT = 64 * 1024;
  static final String PATH = "/api/v1/things";
  static final String AUTHORISED = "Authorization: Bearer " + TOKEN;
  static final String EXPECT = "Expect: 100-continue";
  /** The router's failure handler answers a mounted route's 413 too, in the OIP shape, naming the route's limit. */
  static final String OVER_THE_LIMIT = "request body exceeds the limit of " + LIMIT + " bytes";

  @Override
  protected void mount(KilnGateway gateway) {
    gateway.addRoutes(r -> {
      Router api = Router.router(vertx);
      BearerToken token = new BearerToken(TOKEN);
      api.route().handler(ctx -> {
        if (token.accepts(ctx.request().getHeader("Authorization"))) {
          ctx.next();
        } else {
          ctx.response().setStatusCode(401).end(new JsonObject().put("error", "needs a valid token").encode());
        }
      });
      api.post("/things").handler(RequestBodies.upTo(LIMIT))
          .handler(ctx -> ctx.json(new JsonObject().put("bytes", ctx.body().length())));
      r.route("/api/v1/*").subRouter(api);
    });
  }

  private RawHttp connect() throws IOException {
    return RawHttp.connect(HOST, gateway.httpPort());
  }

  @Test
  void anAuthorisedBodyWithinTheRoutesLimitIsInvitedAndTheConnectionKept() throws IOException {
    byte[] body = "x".repeat(LIMIT).getBytes(StandardCharsets.US_ASCII);
    try (RawHttp c = connect()) {
      c.send(head("POST", PATH, AUTHORISED, EXPECT, "Content-Length: " + body.length));
      assertThat(c.read().statusLine()).isEqualTo("HTTP/1.1 100 Continue");
      c.send(body);
      Answer ok = c.read();
      assertThat(ok.status()).as(ok.body()).isEqualTo(200);
      assertThat(new JsonObject(ok.body()).getInteger("bytes")).isEqualTo(LIMIT);
      c.send(head("GET", "/v2/health/live"));
      assertThat(c.read().status()).isEqualTo(200);
    }
  }

  @Test
  void anUnauthorisedOrOversizedBodyIsRefusedUnsentInTheRoutesShapeAndTheConnectionClosed() throws IOException {
    try (RawHttp c = connect()) {
      c.send(head("POST", PATH, EXPECT, "Content-Length: 10"));
      Answer a = c.read();
      assertThat(a.status()).as("the token is checked before the body is invited").isEqualTo(401);
      assertThat(a.header("Connection")).isEqualToIgnoringCase("close");
      assertThat(c.closedByServer()).isTrue();
    }
    try (RawHttp c = connect()) {
      c.send(head("POST", PATH, AUTHORISED, EXPECT, "Content-Length: " + (LIMIT + 1)));
      Answer a = c.read();
      assertThat(a.status()).isEqualTo(413);
      assertThat(new JsonObject(a.body()).getString("error")).isEqualTo(OVER_THE_LIMIT);
      assertThat(a.header("Connection")).isEqualToIgnoringCase("close");
      assertThat(c.closedByServer()).isTrue();
    }
  }

  @Test
  void aChunkedBodyIsInvitedAndRefusedPastTheRoutesLimitWithTheConnectionKept() throws IOException {
    try (RawHttp c = connect()) {
      c.send(head("POST", PATH, AUTHORISED, EXPECT, "Transfer-Encoding: chunked"));
      assertThat(c.read().statusLine()).isEqualTo("HTTP/1.1 100 Continue");
      byte[] piece = new byte[16 * 1024];
      for (int sent = 0; sent <= LIMIT; sent += piece.length) {
        c.chunk(piece);
      }
      c.lastChunk();
      Answer a = c.read();
      assertThat(a.status()).isEqualTo(413);
      assertThat(new JsonObject(a.body()).getString("error")).isEqualTo(OVER_THE_LIMIT);
      assertThat(a.header("Connection")).as("invited and sent: the framing is known").isNull();
      c.send(head("GET", "/v2/health/live"));
      assertThat(c.read().status()).isEqualTo(200);
    }
  }
}
