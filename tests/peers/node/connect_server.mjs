// The Connect test peer: benchmark.BenchmarkService on connect-node (tests/peers/README.md).
//
// An HTTP/2 cleartext server (h2c, prior knowledge: node:http2 createServer) with
// connectNodeAdapter, which serves every method over the Connect, gRPC and gRPC-Web protocols.
// Connect's unary protocol is what the Dubbo Triple unary wire derives from, so this peer also
// answers Triple-wire unary calls: a bare protobuf (application/proto) or JSON
// (application/json) POST body, errors as a JSON body {"code","message","details"}, trailing
// metadata as `trailer-` prefixed headers. Connect ignores the triple-* headers (it reads
// connect-timeout-ms, which a Triple client does not send, so Triple deadlines are the
// client's own) and does not require connect-protocol-version (requireConnectProtocolHeader
// is false).
//
// The messages of proto/benchmark.proto are defined in code (no protoc): BenchmarkRequest and
// BenchmarkResponse are both {bytes payload = 1}.
//   UnaryCall   answers the request's payload (a unary call ending OK must carry a message,
//               so `x-status: 0` answers an empty one)
//   StreamCall  bidi: one answer per request message until the client half-closes
//               (`x-status: 0` answers none)
// Control metadata (README.md): x-echo-* (response header AND trailer), x-status,
// x-message / x-message-bin, x-delay-ms (once, before anything is sent; ends early when
// the call does), x-response-size. Peer-specific extras:
//   x-error-detail: text   an x-status error carries one detail, a
//                          benchmark.BenchmarkResponse{payload: utf-8 text}
//   x-peer-report: 1       the response headers tell what the peer saw:
//                          x-peer-protocol (connect | grpc | grpc-web),
//                          x-peer-request-encoding (the request's content-encoding, or
//                          grpc-encoding for gRPC; "identity" when absent),
//                          x-peer-accept-encoding (accept-encoding, or grpc-accept-encoding)
//
// gzip is accepted and sent both ways (acceptCompression [gzip], compressMinBytes 0): a
// response is gzipped whenever the client accepts gzip.
//
// Usage: node connect_server.mjs [--port 0] [--host 127.0.0.1]
// Prints `LISTENING <port>`, serves until SIGTERM/SIGINT or EOF on stdin.
import { parseArgs } from "node:util";

import { serveH2c } from "./serve.mjs";

import { MethodKind, proto3 } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { compressionGzip, connectNodeAdapter } from "@connectrpc/connect-node";

const MAX_MESSAGE = 64 * 1024 * 1024;
const MAX_DELAY_MS = 3_600_000;

const payloadField = [{ no: 1, name: "payload", kind: "scalar", T: 12 /* ScalarType.BYTES */ }];
const BenchmarkRequest = proto3.makeMessageType("benchmark.BenchmarkRequest", payloadField);
const BenchmarkResponse = proto3.makeMessageType("benchmark.BenchmarkResponse", payloadField);

const BenchmarkService = {
  typeName: "benchmark.BenchmarkService",
  methods: {
    unaryCall: {
      name: "UnaryCall", I: BenchmarkRequest, O: BenchmarkResponse, kind: MethodKind.Unary,
    },
    streamCall: {
      name: "StreamCall", I: BenchmarkRequest, O: BenchmarkResponse,
      kind: MethodKind.BiDiStreaming,
    },
  },
};

function controlInt(header, key, max) {
  const text = header.get(key);
  if (text === null) return null;
  const n = /^\s*\d+\s*$/.test(text) ? Number(text) : -1;
  if (!(n >= 0 && n <= max)) {
    throw new ConnectError(`bad ${key} ${JSON.stringify(text)}`, Code.InvalidArgument);
  }
  return n;
}

function statusMessage(header) {
  const bin = header.get("x-message-bin");
  if (bin !== null) {  // base64, padded or not; several values arrive comma-joined
    return bin.split(",").map((v) => Buffer.from(v.trim(), "base64").toString("utf8")).join("");
  }
  return header.get("x-message") ?? "";
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}

function report(ctx) {
  const h = ctx.requestHeader;
  const grpc = ctx.protocolName !== "connect";
  const encoding = h.get(grpc ? "grpc-encoding" : "content-encoding") ?? "identity";
  const accept = h.get(grpc ? "grpc-accept-encoding" : "accept-encoding") ?? "";
  ctx.responseHeader.set("x-peer-protocol", ctx.protocolName);
  ctx.responseHeader.set("x-peer-request-encoding", encoding);
  ctx.responseHeader.set("x-peer-accept-encoding", accept);
}

// Applies the control metadata up to the answer: delay, echoed metadata, x-status.
// Returns {status, responseSize}; throws the ConnectError of x-status 1..16.
async function begin(ctx) {
  const h = ctx.requestHeader;
  const status = controlInt(h, "x-status", 16);
  const delayMs = controlInt(h, "x-delay-ms", MAX_DELAY_MS);
  const responseSize = controlInt(h, "x-response-size", MAX_MESSAGE);
  if (delayMs) {
    await sleep(delayMs, ctx.signal);
    if (ctx.signal.aborted) {
      // The server's own deadline (grpc-timeout) aborts with deadline_exceeded; a client
      // that went away with canceled.
      const reason = ctx.signal.reason;
      if (reason instanceof ConnectError) throw reason;
      throw new ConnectError("call ended during x-delay-ms", Code.Canceled);
    }
  }
  if (h.get("x-peer-report") === "1") report(ctx);
  h.forEach((value, key) => {
    if (key.startsWith("x-echo-")) {
      ctx.responseHeader.set(key, value);
      ctx.responseTrailer.set(key, value);
    }
  });
  if (status) {
    const detail = h.get("x-error-detail");
    const details = detail === null
      ? [] : [new BenchmarkResponse({ payload: Buffer.from(detail, "utf8") })];
    throw new ConnectError(statusMessage(h), status, undefined, details);
  }
  return { status, responseSize };
}

function answer(control, request) {
  if (control.responseSize === null) return new BenchmarkResponse({ payload: request.payload });
  return new BenchmarkResponse({ payload: new Uint8Array(control.responseSize).fill(0x61) });
}

function routes(router) {
  router.service(BenchmarkService, {
    async unaryCall(request, ctx) {
      const control = await begin(ctx);
      if (control.status === 0) return new BenchmarkResponse();
      return answer(control, request);
    },
    async *streamCall(requests, ctx) {
      const control = await begin(ctx);
      if (control.status === 0) return;
      for await (const request of requests) {
        yield answer(control, request);
      }
    },
  });
}

function main() {
  const { values } = parseArgs({
    options: {
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "0" },
    },
  });
  const handler = connectNodeAdapter({
    routes,
    acceptCompression: [compressionGzip],
    compressMinBytes: 0,
    requireConnectProtocolHeader: false,  // the default; Triple clients send no such header
    readMaxBytes: MAX_MESSAGE,
    writeMaxBytes: MAX_MESSAGE,
  });
  serveH2c(handler, { host: values.host, port: values.port, name: "connect peer" });
}

main();
