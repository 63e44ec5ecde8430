package io.kiln.runtime.impl;

import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.core.spi.metrics.TCPMetrics;
import io.vertx.core.spi.metrics.VertxMetrics;

/**
 * The clustered event bus's connections to other nodes, as they open and close. Vert.x tells a sender nothing when
 * the connection its messages went out on closes: a request written to it waits for its reply timeout, and one
 * whose write fails (the peer refused the new connection) waits all the same. Its metrics SPI does say when a
 * client connection opens and closes, so this node installs one ({@link #metricsFactory()}, given to the Vert.x
 * builder before the event bus exists) that reports only that, for the net client the event bus connects with (the
 * only {@code NetClient} of a Kiln node; everything else Vert.x meters is left unmetered: its factories answer null).
 *
 * <p>Events come on the connection's event loop; the listener must be quick and must not block.
 */
public final class BusLinks {

  /** Hears the event bus's outbound connections open and close. */
  interface Listener {
    /** A connection to {@code remote} (a node's event-bus server) is open. */
    void opened(Link link);

    /** A connection opened before closed: by either end, by a failed write, or by Vert.x on a missing pong. */
    void closed(Link link);
  }

  /** One outbound connection, as long as it is open; identity matters (two may go to one address). */
  static final class Link {
    final SocketAddress remote;

    Link(SocketAddress remote) {
      this.remote = remote;
    }

    @Override
    public String toString() {
      return String.valueOf(remote);
    }
  }

  private static final Listener NOBODY = new Listener() {
    @Override
    public void opened(Link link) {
    }

    @Override
    public void closed(Link link) {
    }
  };

  private volatile Listener listener = NOBODY;
  private volatile String localAddress;

  /** The factory to hand to {@code Vertx.builder().withMetrics}: one per Vert.x instance. */
  public VertxMetricsFactory metricsFactory() {
    return options -> new VertxMetrics() {
      @Override
      public TCPMetrics<?> createNetClientMetrics(NetClientOptions clientOptions) {
        return new TCPMetrics<Link>() {
          @Override
          public Link connected(SocketAddress remoteAddress, String remoteName) {
            Link link = new Link(remoteAddress);
            listener.opened(link);
            return link;
          }

          @Override
          public void disconnected(Link link, SocketAddress remoteAddress) {
            if (link != null) {
              listener.closed(link);
            }
          }
        };
      }
    };
  }

  /** This node's own event-bus server, {@code ip:port}, as other nodes connect to it. */
  public BusLinks local(String ip, int port) {
    this.localAddress = ip + ":" + port;
    return this;
  }

  String localAddress() {
    return localAddress;
  }

  void listen(Listener l) {
    listener = l == null ? NOBODY : l;
  }
}
