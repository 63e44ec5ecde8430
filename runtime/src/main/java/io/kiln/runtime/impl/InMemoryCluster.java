package io.kiln.runtime.impl;

import io.kiln.runtime.MembershipListener;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.kiln.runtime.spi.cluster.SharedMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The cluster SPI in one JVM: shared maps are {@link ConcurrentHashMap}s, membership is a list ordered by
 * join time (the first is the leader), and listeners run on one notifier thread in event order. Several
 * nodes in one process share one instance, which makes multi-node behaviour testable in milliseconds.
 * {@link #crash(String)} removes a member abruptly, as failure detection would.
 */
public final class InMemoryCluster implements AutoCloseable {

  private final Map<String, Maps> maps = new ConcurrentHashMap<>();
  private final List<String> members = new CopyOnWriteArrayList<>();
  private final Map<String, Member> views = new ConcurrentHashMap<>();
  private final ExecutorService notifier = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "kiln-inmemory-cluster");
    t.setDaemon(true);
    return t;
  });

  /** Joins a member and returns its view of the cluster. */
  public synchronized ClusterBackend join(String memberId) {
    if (members.contains(memberId)) {
      throw new IllegalStateException("member " + memberId + " already joined");
    }
    Member m = new Member(memberId);
    views.put(memberId, m);
    String oldLeader = members.isEmpty() ? null : members.get(0);
    members.add(memberId);
    for (Member other : views.values()) {
      if (!other.id.equals(memberId)) {
        notify(other, l -> l.memberJoined(memberId));
      }
    }
    if (oldLeader == null) {
      notify(m, l -> l.leaderChanged(true));
    }
    return m;
  }

  /** Removes a member without its cooperation, as when its process is killed. */
  public void crash(String memberId) {
    leaveInternal(memberId);
  }

  private synchronized void leaveInternal(String memberId) {
    String oldLeader = members.isEmpty() ? null : members.get(0);
    if (!members.remove(memberId)) {
      return;
    }
    Member gone = views.remove(memberId);
    if (gone != null) {
      gone.listeners.clear();
    }
    String newLeader = members.isEmpty() ? null : members.get(0);
    for (Member other : views.values()) {
      notify(other, l -> l.memberLeft(memberId));
      if (!Objects.equals(oldLeader, newLeader) && other.id.equals(newLeader)) {
        notify(other, l -> l.leaderChanged(true));
      }
    }
  }

  private void notify(Member m, java.util.function.Consumer<MembershipListener> event) {
    for (MembershipListener l : m.listeners) {
      notifier.execute(() -> event.accept(l));
    }
  }

  @Override
  public void close() {
    notifier.shutdownNow();
  }

  /** One shared map's data and listeners. */
  private final class Maps implements SharedMap {
    private final String name;
    private final ConcurrentHashMap<String, String> data = new ConcurrentHashMap<>();
    private final Map<String, SharedMap.EntryListener> listeners = new ConcurrentHashMap<>();

    Maps(String name) {
      this.name = name;
    }

    @Override
    public String name() {
      return name;
    }

    private void fire(String key, String value) {
      for (EntryListener l : listeners.values()) {
        notifier.execute(() -> l.changed(key, value));
      }
    }

    @Override
    public CompletionStage<Optional<String>> get(String key) {
      return CompletableFuture.completedFuture(Optional.ofNullable(data.get(key)));
    }

    @Override
    public CompletionStage<Void> put(String key, String value) {
      synchronized (this) {
        data.put(key, value);
        fire(key, value);
      }
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletionStage<Optional<String>> putIfAbsent(String key, String value) {
      synchronized (this) {
        String prev = data.putIfAbsent(key, value);
        if (prev == null) {
          fire(key, value);
        }
        return CompletableFuture.completedFuture(Optional.ofNullable(prev));
      }
    }

    @Override
    public CompletionStage<Boolean> replace(String key, String expected, String update) {
      synchronized (this) {
        boolean ok = data.replace(key, expected, update);
        if (ok) {
          fire(key, update);
        }
        return CompletableFuture.completedFuture(ok);
      }
    }

    @Override
    public CompletionStage<Void> remove(String key) {
      synchronized (this) {
        if (data.remove(key) != null) {
          fire(key, null);
        }
      }
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletionStage<Boolean> remove(String key, String expected) {
      synchronized (this) {
        boolean ok = data.remove(key, expected);
        if (ok) {
          fire(key, null);
        }
        return CompletableFuture.completedFuture(ok);
      }
    }

    @Override
    public CompletionStage<Map<String, String>> entries() {
      return CompletableFuture.completedFuture(new HashMap<>(data));
    }

    @Override
    public String addListener(EntryListener listener) {
      String id = UUID.randomUUID().toString();
      listeners.put(id, listener);
      return id;
    }

    @Override
    public void removeListener(String registrationId) {
      listeners.remove(registrationId);
    }
  }

  private final class Member implements ClusterBackend {
    private final String id;
    private final List<MembershipListener> listeners = new CopyOnWriteArrayList<>();
    private final Map<String, List<String>> ownListeners = new LinkedHashMap<>();

    Member(String id) {
      this.id = id;
    }

    @Override
    public String localMemberId() {
      return id;
    }

    @Override
    public List<String> members() {
      return new ArrayList<>(members);
    }

    @Override
    public boolean isLeader() {
      List<String> m = members;
      return !m.isEmpty() && m.get(0).equals(id);
    }

    @Override
    public SharedMap map(String name) {
      Maps shared = maps.computeIfAbsent(name, Maps::new);
      return new MemberMap(this, shared);
    }

    @Override
    public void addMembershipListener(MembershipListener listener) {
      listeners.add(listener);
    }

    @Override
    public CompletionStage<Void> leave() {
      synchronized (this) {
        ownListeners.forEach((map, ids) -> ids.forEach(maps.get(map)::removeListener));
        ownListeners.clear();
      }
      leaveInternal(id);
      return CompletableFuture.completedFuture(null);
    }
  }

  /** A member's handle on a shared map: tracks its listeners so they go when the member leaves or crashes. */
  private final class MemberMap implements SharedMap {
    private final Member member;
    private final Maps shared;

    MemberMap(Member member, Maps shared) {
      this.member = member;
      this.shared = shared;
    }

    private boolean alive() {
      return members.contains(member.id);
    }

    @Override
    public String name() {
      return shared.name;
    }

    @Override
    public CompletionStage<Optional<String>> get(String key) {
      return shared.get(key);
    }

    @Override
    public CompletionStage<Void> put(String key, String value) {
      return alive() ? shared.put(key, value) : gone();
    }

    @Override
    public CompletionStage<Optional<String>> putIfAbsent(String key, String value) {
      return alive() ? shared.putIfAbsent(key, value) : gone();
    }

    @Override
    public CompletionStage<Boolean> replace(String key, String expected, String update) {
      return alive() ? shared.replace(key, expected, update) : gone();
    }

    @Override
    public CompletionStage<Void> remove(String key) {
      return alive() ? shared.remove(key) : gone();
    }

    @Override
    public CompletionStage<Boolean> remove(String key, String expected) {
      return alive() ? shared.remove(key, expected) : gone();
    }

    @Override
    public CompletionStage<Map<String, String>> entries() {
      return shared.entries();
    }

    @Override
    public String addListener(EntryListener listener) {
      String id = shared.addListener((k, v) -> {
        if (alive()) {
          listener.changed(k, v);
        }
      });
      synchronized (member) {
        member.ownListeners.computeIfAbsent(shared.name, n -> new ArrayList<>()).add(id);
      }
      return id;
    }

    @Override
    public void removeListener(String registrationId) {
      shared.removeListener(registrationId);
    }

    /** A crashed member's writes must not land, as a dead process's would not. */
    private <T> CompletionStage<T> gone() {
      return CompletableFuture.failedFuture(new IllegalStateException("member " + member.id + " has left the cluster"));
    }
  }
}
