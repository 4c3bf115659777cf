// A grpc-js (@grpc/grpc-js) server that echoes every method of the services in one .proto
// file and answers server reflection on grpc.reflection.v1 ONLY (@grpc/reflection's v1
// implementation, not its v1alpha one), so that a client's reflection works against it only
// through the v1 service. Echo by shape: unary and server streaming answer with the request
// (server streaming: twice), client streaming with its last request, bidi with each request.
//
// Usage: node reflection_server.mjs [--proto FILE] [--include DIR] [--port 0] [--host 127.0.0.1]
// (default: the repository's proto/benchmark.proto, the BenchmarkService echo)
// Prints `LISTENING <port>`, serves until SIGTERM/SIGINT or EOF on stdin.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";

const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "proto");
const { values: args } = parseArgs({
  options: {
    proto: { type: "string", default: join(PROTO_DIR, "benchmark.proto") },
    include: { type: "string", default: PROTO_DIR },
    port: { type: "string", default: "0" },
    host: { type: "string", default: "127.0.0.1" },
  },
});
// keepCase: the field names as the .proto writes them (proto-loader camelCases them by default).
const definition = protoLoader.loadSync(args.proto, { includeDirs: [args.include], keepCase: true });

// One handler per method shape.
function echo(method) {
  if (method.requestStream && method.responseStream) {
    return (call) => {
      call.on("data", (m) => call.write(m));
      call.on("end", () => call.end());
    };
  }
  if (method.requestStream) {
    return (call, done) => {
      let last = null;
      call.on("data", (m) => { last = m; });
      call.on("end", () => done(null, last ?? {}));
    };
  }
  if (method.responseStream) {
    return (call) => {
      call.write(call.request);
      call.write(call.request);
      call.end();
    };
  }
  return (call, done) => done(null, call.request);
}

const server = new grpc.Server();
for (const service of Object.values(definition)) {
  const methods = Object.values(service);
  if (!methods.length || methods[0].path === undefined) continue; // a message or enum type
  const impl = {};
  for (const [name, method] of Object.entries(service)) impl[name] = echo(method);
  server.addService(service, impl);
}
new ReflectionService(definition).v1.addToServer(server);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.forceShutdown();
  setTimeout(() => process.exit(0), 100).unref();
};
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, stop);
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();

server.bindAsync(`${args.host}:${args.port}`, grpc.ServerCredentials.createInsecure(),
  (err, port) => {
    if (err) {
      console.error(`reflection_server: ${err.message}`);
      process.exit(1);
    }
    process.stdout.write(`LISTENING ${port}\n`);
  });
