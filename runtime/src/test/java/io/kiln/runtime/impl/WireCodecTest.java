package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.Lifetime;
import io.kiln.runtime.RemoteException;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.function.ActorMethod2;
import io.kiln.runtime.function.ActorFactory1;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageCodec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What crosses a node boundary: encoded by the sender's codec, decoded by the receiver's. */
class WireCodecTest {

  public record Point(int x, int y, List<String> tags) {
  }

  public static final class Target {
    public Target(Map<String, Integer> config) {
    }

    public Point move(Point p, long dx) {
      return new Point(p.x() + (int) dx, p.y(), p.tags());
    }

    public byte[] blob(byte[] in, int n) {
      return in;
    }
  }

  private static <T> T roundTrip(MessageCodec<T, T> codec, T message) {
    Buffer buf = Buffer.buffer();
    buf.appendString("prefix"); // decoding starts at an offset inside the frame
    codec.encodeToWire(buf, message);
    return codec.decodeFromWire(6, buf);
  }

  @Test
  void callArgumentsTravelWithTheirDeclaredTypes() {
    ActorMethod2<Target, Point, Long, Point> move = Target::move;
    MethodRef ref = Lambdas.resolve(move);
    CallMessage sent = new CallMessage(ref, move, new Object[] {new Point(1, 2, List.of("a")), 5L});
    CallMessage got = roundTrip(new CallMessage.Codec(), sent);
    assertThat(got.fn).isNull(); // no lambda crosses the wire: the receiver resolves the method by name
    assertThat(got.method.key()).isEqualTo(ref.key());
    assertThat(got.args).containsExactly(new Point(1, 2, List.of("a")), 5L);
  }

  @Test
  void bytesTravelAsBinary() {
    ActorMethod2<Target, byte[], Integer, byte[]> blob = Target::blob;
    byte[] data = new byte[100_000];
    data[99_999] = 7;
    CallMessage got = roundTrip(new CallMessage.Codec(),
        new CallMessage(Lambdas.resolve(blob), blob, new Object[] {data, 3}));
    assertThat((byte[]) got.args[0]).isEqualTo(data);
  }

  @Test
  void capturingLambdasAreRefusedForTheWire() {
    int captured = 3;
    ActorMethod2<Target, Point, Long, Point> lambda = (t, p, d) -> t.move(p, d + captured);
    CallMessage sent = new CallMessage(Lambdas.resolve(lambda), lambda, new Object[] {new Point(0, 0, List.of()), 1L});
    assertThatThrownBy(() -> roundTrip(new CallMessage.Codec(), sent))
        .hasMessageContaining("method reference");
  }

  @Test
  void repliesDecodeWithTheCallersType() {
    ReplyMessage got = roundTrip(new ReplyMessage.Codec(), ReplyMessage.ok(new Point(3, 4, List.of()), Point.class));
    assertThat(got.value(Point.class)).isEqualTo(new Point(3, 4, List.of()));
  }

  @Test
  void runtimeExceptionsKeepTheirTypeUnknownOnesBecomeRemoteExceptions() {
    ReplyMessage died = roundTrip(new ReplyMessage.Codec(), ReplyMessage.failed(new ActorDiedException("a1", "gone")));
    assertThat(died.error()).isInstanceOf(ActorDiedException.class).hasMessage("gone");
    assertThat(((ActorDiedException) died.error()).actorId()).isEqualTo("a1");
    ReplyMessage other = roundTrip(new ReplyMessage.Codec(), ReplyMessage.failed(new java.io.UncheckedIOException(
        "disk", new java.io.IOException("full"))));
    assertThat(other.error()).isInstanceOf(RemoteException.class).hasMessageContaining("UncheckedIOException")
        .hasMessageContaining("disk");
  }

  @Test
  void createActorRequestCarriesOptionsAndConstructorArguments() {
    ActorFactory1<Map<String, Integer>, Target> ctor = Target::new;
    ActorOptions options = ActorOptions.builder().name("w").namespace("kiln").lifetime(Lifetime.DETACHED)
        .resources(Resources.gpu(0.5).withCpu(1).with("slot", 2)).strategy(SchedulingStrategy.nodeAffinity("n2", true))
        .maxConcurrency(4).maxRestarts(-1).maxTaskRetries(2).placementTimeout(Duration.ofSeconds(7)).build();
    var sent = new AgentRequests.CreateActor("id1", Lambdas.resolve(ctor), ctor, new Object[] {Map.of("k", 1)}, options,
        "n1", "owner", "{\"x\":1}", 2);
    var got = roundTrip(new AgentRequests.CreateActorCodec(), sent);
    assertThat(got.options()).isEqualTo(options);
    assertThat(got.args()).containsExactly(Map.of("k", 1));
    assertThat(got.ownerActorId()).isEqualTo("owner");
    assertThat(got.pendingRecordJson()).isEqualTo("{\"x\":1}");
    assertThat(got.restarts()).isEqualTo(2);
  }

  @Test
  void aFrameClaimingMoreBytesThanItHasIsRejectedBeforeAllocating() {
    Buffer buf = Buffer.buffer().appendInt(Integer.MAX_VALUE).appendBytes(new byte[10]);
    assertThatThrownBy(() -> new CallMessage.Codec().decodeFromWire(0, buf))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("claims");
  }
}
