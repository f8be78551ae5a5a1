import type { Server } from "node:http";
import type { Duplex } from "node:stream";

/**
 * Requests Node's HTTP parser refuses before Express sees them (headers over 16 KiB, malformed
 * request lines) would get Node's bare answer with an empty body; they get `{message}` like every
 * other error (contract §1).
 */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
    const body = JSON.stringify({ message: tooLarge ? "Request headers are too large" : "Malformed request" });
    socket.end(
      [
        tooLarge ? "HTTP/1.1 431 Request Header Fields Too Large" : "HTTP/1.1 400 Bad Request",
        "Content-Type: application/json; charset=utf-8",
        `Content-Length: ${Buffer.byteLength(body)}`,
        "Connection: close",
        "",
        body,
      ].join("\r\n"),
    );
  });
}
