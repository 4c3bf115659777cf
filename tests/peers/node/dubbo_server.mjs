// The dubbo-js test peer: benchmark.BenchmarkService on Apache Dubbo's own JavaScript server
// (@apachedubbo/dubbo-node 3.0.0-alpha, pinned in package-lock.json; tests/peers/README.md).
//
// One h2c port (node:http2, prior knowledge) serves every method over dubbo-js's Triple wire
// (Connect-derived: bare application/proto or application/json body, errors as a JSON body
// {"status": <gRPC code as a number>, "message", "details"} with the HTTP status of the code,
// deadline read from tri-service-timeout) and over gRPC.  It also serves dubbo-js's Triple
// streaming wire (application/connect+proto), which triple_py does not speak.
//
// The service is registered twice: without group/version, and as group "g" version "1.0.0"
// (dubbo-node routes on path + tri-service-version + tri-service-group and answers a bare 404
// when nothing matches).  Every answer carries x-peer-route: "<group>/<version>" it was served
// by.
//
// Control metadata (README.md): x-echo-* (response header AND trailer), x-status,
// x-message / x-message-bin, x-delay-ms, x-response-size, x-error-detail (one
// benchmark.BenchmarkResponse{payload: text} detail on an x-status error).
// x-peer-report: 1 adds response headers telling what the peer saw:
//   x-peer-timeout-ms     the deadline dubbo-js gave the call (ctx.timeoutMs() when the
//                         handler started), or "none"
//   x-peer-content-type   the request's content-type
//   x-peer-request-encoding / x-peer-accept-encoding   (content-/grpc-) encoding headers
//
// gzip both ways (acceptCompression [gzip], compressMinBytes 0).
//
// Usage: node dubbo_server.mjs [--port 0] [--host 127.0.0.1]
// Prints `LISTENING <port>`, serves until SIGTERM/SIGINT or EOF on stdin.
import { parseArgs } from "node:util";

import { serveH2c } from "./serve.mjs";

import { MethodKind, proto3 } from "@bufbuild/protobuf";
import { Code, DubboError } from "@apachedubbo/dubbo";
import { compressionGzip, dubboNodeAdapter } from "@apachedubbo/dubbo-node";

const LIMIT = 64 * 1024 * 1024;
const LONGEST_DELAY_MS = 3_600_000;
const ROUTES = [{ serviceGroup: "", serviceVersion: "" },
                { serviceGroup: "g", serviceVersion: "1.0.0" }];

const bytesField = [{ no: 1, name: "payload", kind: "scalar", T: 12 /* BYTES */ }];
const Request = proto3.makeMessageType("benchmark.BenchmarkRequest", bytesField);
const Response = proto3.makeMessageType("benchmark.BenchmarkResponse", bytesField);
const Service = {
  typeName: "benchmark.BenchmarkService",
  methods: {
    unaryCall: { name: "UnaryCall", I: Request, O: Response, kind: MethodKind.Unary },
    streamCall: { name: "StreamCall", I: Request, O: Response, kind: MethodKind.BiDiStreaming },
  },
};

// A non-negative integer control header, or null when absent.
function intHeader(headers, key, most) {
  const raw = headers.get(key);
  if (raw === null) return null;
  const value = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!(value <= most)) throw new DubboError(`bad ${key}: ${raw}`, Code.InvalidArgument);
  return value;
}

// x-message-bin (base64 values, possibly comma-joined) wins over x-message.
function messageOf(headers) {
  const bin = headers.get("x-message-bin");
  if (bin === null) return headers.get("x-message") ?? "";
  const parts = bin.split(",").map((part) => Buffer.from(part.trim(), "base64"));
  return Buffer.concat(parts).toString("utf8");
}

function waitMs(ms, signal) {
  return new Promise((resolve) => {
    const onAbort = () => { clearTimeout(timer); resolve(); };
    const timer = setTimeout(() => { signal.removeEventListener("abort", onAbort); resolve(); },
      ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

// Everything before the answer: the report (with the deadline as the handler first saw it),
// echoed metadata, the delay, x-status.  Returns the x-response-size (or null).
async function prologue(ctx, route) {
  const seen = ctx.timeoutMs();
  const h = ctx.requestHeader;
  const out = ctx.responseHeader;
  out.set("x-peer-route", `${route.serviceGroup}/${route.serviceVersion}`);
  if (h.get("x-peer-report") === "1") {
    const grpc = (h.get("content-type") ?? "").startsWith("application/grpc");
    out.set("x-peer-timeout-ms", seen === undefined ? "none" : String(seen));
    out.set("x-peer-content-type", h.get("content-type") ?? "");
    out.set("x-peer-request-encoding",
      h.get(grpc ? "grpc-encoding" : "content-encoding") ?? "identity");
    out.set("x-peer-accept-encoding", h.get(grpc ? "grpc-accept-encoding" : "accept-encoding") ?? "");
  }
  for (const [key, value] of h) {
    if (!key.startsWith("x-echo-")) continue;
    out.set(key, value);
    ctx.responseTrailer.set(key, value);
  }
  const delay = intHeader(h, "x-delay-ms", LONGEST_DELAY_MS);
  if (delay) {
    await waitMs(delay, ctx.signal);
    if (ctx.signal.aborted) {
      const why = ctx.signal.reason;
      throw why instanceof DubboError ? why : new DubboError("ended while delayed", Code.Canceled);
    }
  }
  const status = intHeader(h, "x-status", 16);
  if (status) {
    const text = h.get("x-error-detail");
    const details = text === null ? [] : [new Response({ payload: Buffer.from(text, "utf8") })];
    throw new DubboError(messageOf(h), status, undefined, details);
  }
  return { status, size: intHeader(h, "x-response-size", LIMIT) };
}

function reply(control, request) {
  if (control.size === null) return new Response({ payload: request.payload });
  return new Response({ payload: new Uint8Array(control.size).fill(0x61) });
}

function implementation(route) {
  return {
    async unaryCall(request, ctx) {
      const control = await prologue(ctx, route);
      return control.status === 0 ? new Response() : reply(control, request);
    },
    async *streamCall(requests, ctx) {
      const control = await prologue(ctx, route);
      if (control.status === 0) return;
      for await (const request of requests) yield reply(control, request);
    },
  };
}

function main() {
  const { values } = parseArgs({
    options: { host: { type: "string", default: "127.0.0.1" },
               port: { type: "string", default: "0" } },
  });
  const handler = dubboNodeAdapter({
    routes(router) {
      for (const route of ROUTES) router.service(Service, implementation(route), route);
    },
    acceptCompression: [compressionGzip],
    compressMinBytes: 0,
    readMaxBytes: LIMIT,
    writeMaxBytes: LIMIT,
  });
  serveH2c(handler, { host: values.host, port: values.port, name: "dubbo-js peer" });
}

main();
