package io.kiln.runtime.impl;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorNameTakenException;
import io.kiln.runtime.ActorNotFoundException;
import io.kiln.runtime.ActorUnavailableException;
import io.kiln.runtime.CallTimeoutException;
import io.kiln.runtime.Futures;
import io.kiln.runtime.InfeasibleResourcesException;
import io.kiln.runtime.PlacementTimeoutException;
import io.kiln.runtime.RemoteException;
import io.kiln.runtime.spi.codec.WireErrorCodec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * Encodes exceptions for the wire as {@code {type, message, data}} and decodes them back, through the
 * runtime's own codec and any {@link WireErrorCodec} found by {@link ServiceLoader}. Unknown types arrive
 * as {@link RemoteException} carrying the original class name and message.
 */
final class ErrorCodecs {

  private static final List<WireErrorCodec> CODECS = load();

  private ErrorCodecs() {
  }

  private static List<WireErrorCodec> load() {
    List<WireErrorCodec> list = new ArrayList<>();
    ServiceLoader.load(WireErrorCodec.class, ErrorCodecs.class.getClassLoader()).forEach(list::add);
    list.add(new RuntimeErrors());
    return List.copyOf(list);
  }

  static Map<String, Object> encode(Throwable error) {
    Throwable t = Futures.unwrap(error);
    Map<String, Object> out = new LinkedHashMap<>();
    for (WireErrorCodec codec : CODECS) {
      if (codec.handles(t)) {
        out.put("type", codec.type());
        out.put("message", String.valueOf(t.getMessage()));
        out.put("data", codec.encode(t));
        return out;
      }
    }
    out.put("type", "remote");
    out.put("message", t instanceof RemoteException r ? r.getMessage() : String.valueOf(t.getMessage()));
    out.put("data", Map.of("class", t instanceof RemoteException r ? r.remoteClass() : t.getClass().getName()));
    return out;
  }

  @SuppressWarnings("unchecked")
  static Throwable decode(Map<String, Object> encoded) {
    String type = String.valueOf(encoded.get("type"));
    String message = String.valueOf(encoded.get("message"));
    Object rawData = encoded.get("data");
    Map<String, Object> data = rawData instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    for (WireErrorCodec codec : CODECS) {
      if (codec.type().equals(type)) {
        return codec.decode(message, data);
      }
    }
    Object cls = data.get("class");
    return new RemoteException(cls == null ? "unknown" : cls.toString(), message);
  }

  /** The runtime's own exceptions and the JDK argument/state exceptions, which callers test for. */
  private static final class RuntimeErrors implements WireErrorCodec {

    @Override
    public String type() {
      return "kiln.runtime";
    }

    @Override
    public boolean handles(Throwable e) {
      return e instanceof ActorDiedException || e instanceof ActorUnavailableException
          || e instanceof ActorNotFoundException || e instanceof ActorNameTakenException
          || e instanceof InfeasibleResourcesException || e instanceof PlacementTimeoutException
          || e instanceof CallTimeoutException || e instanceof io.kiln.runtime.NodeDiedException
          || e instanceof PlacementRefusedException || e.getClass() == IllegalArgumentException.class
          || e.getClass() == IllegalStateException.class;
    }

    @Override
    public Map<String, Object> encode(Throwable e) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("class", e.getClass().getSimpleName());
      if (e instanceof ActorDiedException d && d.actorId() != null) {
        m.put("actorId", d.actorId());
      }
      if (e instanceof io.kiln.runtime.NodeUnreachableException u && u.nodeId() != null) {
        m.put("nodeId", u.nodeId());
      }
      return m;
    }

    @Override
    public Throwable decode(String message, Map<String, Object> data) {
      String cls = String.valueOf(data.get("class"));
      return switch (cls) {
        case "ActorDiedException" -> new ActorDiedException((String) data.get("actorId"), message);
        case "ActorUnavailableException" -> new ActorUnavailableException(message);
        case "NodeUnreachableException" -> new io.kiln.runtime.NodeUnreachableException((String) data.get("nodeId"),
            message);
        case "ActorNotFoundException" -> new ActorNotFoundException(message);
        case "ActorNameTakenException" -> new ActorNameTakenException(message);
        case "InfeasibleResourcesException" -> new InfeasibleResourcesException(message);
        case "PlacementTimeoutException" -> new PlacementTimeoutException(message);
        case "CallTimeoutException" -> new CallTimeoutException(message);
        case "NodeDiedException" -> new io.kiln.runtime.NodeDiedException(message);
        case "PlacementRefusedException" -> new PlacementRefusedException(message);
        case "IllegalArgumentException" -> new IllegalArgumentException(message);
        case "IllegalStateException" -> new IllegalStateException(message);
        default -> new RemoteException(cls, message);
      };
    }
  }
}
