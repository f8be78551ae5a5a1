import type { Socket } from "node:net";
import type { buildConnector } from "undici";

/** A connection opened ahead (preconnect) that no request has taken by then is closed. */
const PRECONNECTED_IDLE_MS = 10_000;

/**
 * Connections opened ahead of a burst (preconnect), per origin, until the pool takes them for its
 * requests. undici's pools connect only when a request needs a connection, so without them a burst
 * to a receiver not written to for a while spends its first milliseconds connecting.
 */
export function createPreconnections(connect: buildConnector.connector) {
  /** Connections ready per origin, each with its idle timer and the listener that drops it. */
  const ready = new Map<string, Map<Socket, { timer: NodeJS.Timeout; drop: () => void }>>();
  const opening = new Map<string, number>();
  let closed = false;

  /** Takes a connection out of the ready ones; false when it was not there. */
  const forget = (origin: string, socket: Socket) => {
    const sockets = ready.get(origin);
    const watch = sockets?.get(socket);
    if (!sockets || !watch) return false;
    sockets.delete(socket);
    if (sockets.size === 0) ready.delete(origin);
    clearTimeout(watch.timer);
    socket.off("close", watch.drop).off("end", watch.drop).off("error", watch.drop);
    return true;
  };

  return {
    /**
     * Opens connections until `more` beyond those already open or opening ahead are open; resolves
     * once the ones it opened are open or have failed.
     */
    open(origin: string, more: number): Promise<void> {
      const wanted = more - (ready.get(origin)?.size ?? 0) - (opening.get(origin) ?? 0);
      if (closed || wanted <= 0) return Promise.resolve();
      const url = new URL(origin);
      // Literal IPv6 hosts come bracketed in URLs; sockets take them bare, as undici passes them.
      const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
      opening.set(origin, (opening.get(origin) ?? 0) + wanted);
      const opened = Array.from(
        { length: wanted },
        () =>
          new Promise<void>((resolve) => {
            connect(
              {
                host: url.host,
                hostname,
                protocol: url.protocol,
                port: url.port,
                servername: undefined,
                localAddress: undefined,
              },
              (error, connected) => {
                opening.set(origin, (opening.get(origin) ?? 1) - 1);
                resolve();
                if (error || !connected) return;
                const socket = connected as Socket;
                if (closed) return void socket.destroy();
                const drop = () => {
                  if (forget(origin, socket)) socket.destroy();
                };
                // Closed by the receiver, broken, or never taken: no request will be written on it.
                socket.once("close", drop).once("end", drop).once("error", drop);
                const sockets = ready.get(origin) ?? new Map();
                sockets.set(socket, { timer: setTimeout(drop, PRECONNECTED_IDLE_MS).unref(), drop });
                ready.set(origin, sockets);
              },
            );
          }),
      );
      return Promise.all(opened).then(() => undefined);
    },
    /** A connection opened ahead to `origin`, now the pool's; undefined when there is none. */
    take(origin: string): Socket | undefined {
      const sockets = ready.get(origin);
      if (!sockets) return undefined;
      for (const socket of [...sockets.keys()]) {
        forget(origin, socket);
        if (!socket.destroyed && socket.readyState === "open") return socket;
        socket.destroy();
      }
      return undefined;
    },
    close() {
      closed = true;
      for (const sockets of [...ready.values()]) for (const { drop } of [...sockets.values()]) drop();
    },
  };
}
