/**
 * Plug-in points of the wire codec: how exceptions and value types cross nodes. Implementations are found
 * with {@link java.util.ServiceLoader}. Nothing on Kiln's sockets uses Java native serialization.
 */
package io.kiln.runtime.spi.codec;
