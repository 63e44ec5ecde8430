package io.kiln.runtime.impl.cluster;

import com.hazelcast.cluster.Member;
import com.hazelcast.cluster.MembershipEvent;
import com.hazelcast.cluster.MembershipListener;
import com.hazelcast.core.EntryEvent;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import com.hazelcast.map.listener.EntryAddedListener;
import com.hazelcast.map.listener.EntryEvictedListener;
import com.hazelcast.map.listener.EntryExpiredListener;
import com.hazelcast.map.listener.EntryRemovedListener;
import com.hazelcast.map.listener.EntryUpdatedListener;
import com.hazelcast.splitbrainprotection.SplitBrainProtectionException;
import io.kiln.runtime.BelowMinimumClusterSizeException;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.kiln.runtime.spi.cluster.SharedMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster SPI on an embedded Hazelcast member (the same member the clustered Vert.x event bus uses).
 * Membership is read in Kiln node ids (a member attribute); the leader is the oldest member, which
 * Hazelcast lists first; shared maps are {@link IMap}s of strings, whose conditional operations are
 * atomic per key. Hazelcast's map calls block, so they run on a small pool of this backend's own and
 * never on the caller's (event-loop) thread.
 */
public final class HazelcastBackend implements ClusterBackend {

  private static final Logger LOG = LoggerFactory.getLogger(HazelcastBackend.class);

  private final HazelcastInstance hz;
  private final String nodeId;
  private final ExecutorService io;
  private final ExecutorService events;
  private final List<io.kiln.runtime.MembershipListener> listeners = new CopyOnWriteArrayList<>();
  private final AtomicBoolean wasLeader = new AtomicBoolean();
  private volatile List<String> members = List.of();
  /**
   * The member that is each node id: the oldest carrying it. A newer member with the same id (a restarted pod
   * whose previous incarnation is not yet declared dead, or a misconfigured twin, both of which wait or leave
   * before they start a runtime) is not reported as joining or leaving; when the acting member leaves, the node
   * is reported gone, and a newer one carrying the id becomes the node (reported joining). Event thread only.
   */
  private final Map<String, UUID> acting = new HashMap<>();

  public HazelcastBackend(HazelcastInstance hz, String nodeId) {
    this.hz = hz;
    this.nodeId = nodeId;
    this.io = Executors.newFixedThreadPool(4, daemon("kiln-hz-io"));
    this.events = Executors.newSingleThreadExecutor(daemon("kiln-hz-events"));
    for (Member m : hz.getCluster().getMembers()) {
      acting.putIfAbsent(nodeOf(m), m.getUuid());
    }
    hz.getCluster().addMembershipListener(new MembershipListener() {
      @Override
      public void memberAdded(MembershipEvent e) {
        onEventThread(() -> added(e.getMember()));
      }

      @Override
      public void memberRemoved(MembershipEvent e) {
        onEventThread(() -> removed(e.getMember()));
      }
    });
    refreshMembers();
    wasLeader.set(isLeader());
  }

  /** Runs a listener task in event order; after {@link #leave()} there is nobody left to tell. */
  private void onEventThread(Runnable task) {
    try {
      events.execute(task);
    } catch (java.util.concurrent.RejectedExecutionException ignored) {
      // this member has left the cluster
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  private static String nodeOf(Member m) {
    String id = m.getAttribute(HazelcastConfigs.NODE_ATTRIBUTE);
    return id != null ? id : m.getUuid().toString();
  }

  private void refreshMembers() {
    List<String> ids = new ArrayList<>();
    for (Member m : hz.getCluster().getMembers()) {
      String id = nodeOf(m);
      if (!ids.contains(id)) {
        ids.add(id);
      }
    }
    members = List.copyOf(ids);
  }

  private void added(Member m) {
    String id = nodeOf(m);
    UUID first = acting.putIfAbsent(id, m.getUuid());
    if (first != null && !first.equals(m.getUuid())) {
      LOG.warn("a second member ({}) carries node id {}; it counts only once the first one has left", m.getAddress(), id);
      refreshMembers();
      return;
    }
    membershipChanged(id, true);
  }

  private void removed(Member m) {
    String id = nodeOf(m);
    if (!m.getUuid().equals(acting.get(id))) {
      refreshMembers(); // a second member with that id gave up; the node it named is still here
      return;
    }
    acting.remove(id);
    membershipChanged(id, false);
    for (Member next : hz.getCluster().getMembers()) {
      if (id.equals(nodeOf(next)) && !next.getUuid().equals(m.getUuid())) {
        acting.put(id, next.getUuid());
        membershipChanged(id, true); // the node's next incarnation
        break;
      }
    }
  }

  private void membershipChanged(String member, boolean joined) {
    refreshMembers();
    for (var l : listeners) {
      try {
        if (joined) {
          l.memberJoined(member);
        } else {
          l.memberLeft(member);
        }
      } catch (RuntimeException ex) {
        LOG.warn("membership listener failed", ex);
      }
    }
    boolean leader = isLeader();
    if (leader != wasLeader.getAndSet(leader)) {
      listeners.forEach(l -> l.leaderChanged(leader));
    }
  }

  public HazelcastInstance hazelcast() {
    return hz;
  }

  @Override
  public String localMemberId() {
    return nodeId;
  }

  @Override
  public List<String> members() {
    return members;
  }

  @Override
  public boolean isLeader() {
    List<String> m = members;
    return !m.isEmpty() && m.get(0).equals(nodeId);
  }

  @Override
  public boolean isProtected(String name) {
    return minClusterSize() > 1 && HazelcastConfigs.PROTECTED_MAPS.contains(name);
  }

  @Override
  public int minClusterSize() {
    var sbp = hz.getConfig().getSplitBrainProtectionConfigs().get(HazelcastConfigs.SPLIT_BRAIN_PROTECTION);
    return sbp == null ? 1 : sbp.getMinimumClusterSize();
  }

  @Override
  public SharedMap map(String name) {
    return new HzMap(hz.getMap(name));
  }

  @Override
  public void addMembershipListener(io.kiln.runtime.MembershipListener listener) {
    listeners.add(listener);
  }

  @Override
  public CompletionStage<Void> leave() {
    return CompletableFuture.runAsync(() -> {
      events.shutdownNow();
      io.shutdown();
    });
  }

  private <T> CompletionStage<T> async(Supplier<T> op) {
    try {
      return CompletableFuture.supplyAsync(op, io);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return CompletableFuture.failedFuture(new IllegalStateException("node " + nodeId + " has left the cluster"));
    }
  }

  private final class HzMap implements SharedMap {
    private final IMap<String, String> map;

    HzMap(IMap<String, String> map) {
      this.map = map;
    }

    @Override
    public String name() {
      return map.getName();
    }

    @Override
    public CompletionStage<Optional<String>> get(String key) {
      return async(() -> Optional.ofNullable(map.get(key)));
    }

    @Override
    public CompletionStage<Void> put(String key, String value) {
      return write(() -> {
        map.set(key, value);
        return null;
      });
    }

    @Override
    public CompletionStage<Optional<String>> putIfAbsent(String key, String value) {
      return write(() -> Optional.ofNullable(map.putIfAbsent(key, value)));
    }

    @Override
    public CompletionStage<Boolean> replace(String key, String expected, String update) {
      return write(() -> map.replace(key, expected, update));
    }

    @Override
    public CompletionStage<Void> remove(String key) {
      return write(() -> {
        map.delete(key);
        return null;
      });
    }

    @Override
    public CompletionStage<Boolean> remove(String key, String expected) {
      return write(() -> map.remove(key, expected));
    }

    /** A write; split-brain protection's refusal becomes {@link BelowMinimumClusterSizeException}, naming the sizes. */
    private <T> CompletionStage<T> write(Supplier<T> op) {
      return async(() -> {
        try {
          return op.get();
        } catch (SplitBrainProtectionException e) {
          throw new BelowMinimumClusterSizeException(map.getName(), minClusterSize(),
              hz.getCluster().getMembers().size(), e);
        }
      });
    }

    @Override
    public CompletionStage<Map<String, String>> entries() {
      return async(() -> new HashMap<>(map));
    }

    @Override
    public String addListener(EntryListener listener) {
      UUID id = map.addEntryListener(new Forwarder(listener), true);
      return id.toString();
    }

    @Override
    public void removeListener(String registrationId) {
      map.removeEntryListener(UUID.fromString(registrationId));
    }
  }

  /** Hazelcast entry events, forwarded in order on this backend's event thread. */
  private final class Forwarder implements EntryAddedListener<String, String>, EntryUpdatedListener<String, String>,
      EntryRemovedListener<String, String>, EntryEvictedListener<String, String>,
      EntryExpiredListener<String, String> {
    private final SharedMap.EntryListener target;

    Forwarder(SharedMap.EntryListener target) {
      this.target = target;
    }

    private void forward(String key, String value) {
      onEventThread(() -> target.changed(key, value));
    }

    @Override
    public void entryAdded(EntryEvent<String, String> e) {
      forward(e.getKey(), e.getValue());
    }

    @Override
    public void entryUpdated(EntryEvent<String, String> e) {
      forward(e.getKey(), e.getValue());
    }

    @Override
    public void entryRemoved(EntryEvent<String, String> e) {
      forward(e.getKey(), null);
    }

    @Override
    public void entryEvicted(EntryEvent<String, String> e) {
      forward(e.getKey(), null);
    }

    @Override
    public void entryExpired(EntryEvent<String, String> e) {
      forward(e.getKey(), null);
    }
  }
}
