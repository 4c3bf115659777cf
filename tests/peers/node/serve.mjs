// The Node test peers' server life cycle (tests/peers/README.md's convention): an HTTP/2
// cleartext server (prior knowledge) on host:port that prints `LISTENING <port>` once it
// accepts connections and stops on SIGTERM, SIGINT or EOF on stdin, closing every session.
import * as http2 from "node:http2";

// Serves `handler` (node:http2's request listener).  `settings` and the other node:http2
// server options go in `options`; the stream window defaults to 16 MiB - 1.  `name` prefixes
// the error printed when the server cannot listen (exit status 1).
export function serveH2c(handler, { host, port, name, options = {} }) {
  const server = http2.createServer({
    ...options,
    settings: { initialWindowSize: 16 * 1024 * 1024 - 1, ...(options.settings ?? {}) },
  }, handler);
  const sessions = new Set();
  server.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close();
    for (const session of sessions) session.destroy();
    setTimeout(() => process.exit(0), 200).unref();
  };
  for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, stop);
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
  server.on("error", (err) => {
    console.error(`${name}: ${err.message}`);
    process.exit(1);
  });
  server.listen(Number(port), host, () => {
    process.stdout.write(`LISTENING ${server.address().port}\n`);
  });
  return server;
}
