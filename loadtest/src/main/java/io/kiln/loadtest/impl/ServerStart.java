package io.kiln.loadtest.impl;

import io.vertx.core.Future;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.TimeUnit;

/** Start-up helpers shared by the bare servers. Stateless. */
public final class ServerStart {

  private ServerStart() {
  }

  /**
   * The port {@code instances} server instances should all ask for. Vert.x shares a listening port between
   * instances only if they ask for the same port; with port 0 each would get its own. So pick the free port
   * first (another process could take it meanwhile: then start fails with a clear bind error).
   */
  public static int sharedPort(String host, int port, int instances) {
    if (port != 0 || instances == 1) {
      return port;
    }
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(host))) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException("cannot find a free port on " + host + ": " + e.getMessage(), e);
    }
  }

  /** Makes one server instance, which records the port it bound in {@code bound[index]}. */
  @FunctionalInterface
  public interface Instances {
    io.vertx.core.Deployable create(int port, int[] bound, int index);
  }

  /**
   * Deploys {@code instances} server instances sharing one port ({@link #sharedPort}) and waits for them.
   *
   * @return the port they all bound
   * @throws IllegalStateException "{@code what} failed to start: ..." or if the instances bound different ports
   */
  public static int deployShared(io.vertx.core.Vertx vertx, String host, int port, int instances, Instances factory,
                                 String what) {
    int shared = sharedPort(host, port, instances);
    int[] bound = new int[instances];
    java.util.concurrent.atomic.AtomicInteger index = new java.util.concurrent.atomic.AtomicInteger();
    await(vertx.deployVerticle(() -> factory.create(shared, bound, index.getAndIncrement()),
        new io.vertx.core.DeploymentOptions().setInstances(instances)), what);
    if (java.util.Arrays.stream(bound).distinct().count() != 1) {
      throw new IllegalStateException(what + " instances bound different ports: " + java.util.Arrays.toString(bound));
    }
    return bound[0];
  }

  /**
   * Waits up to 30 s.
   *
   * @throws IllegalStateException "{@code what} failed to start: ..." if it failed or timed out
   */
  public static <T> T await(Future<T> f, String what) {
    try {
      return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(what + " was interrupted while starting", e);
    } catch (Exception e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw new IllegalStateException(what + " failed to start: " + cause.getMessage(), cause);
    }
  }
}
