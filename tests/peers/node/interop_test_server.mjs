// The Node interop peers: grpc.testing.TestService on connect-node (`--stack connect`, the
// default) or on Apache Dubbo's dubbo-node (`--stack dubbo`), both npm, pinned in
// package-lock.json (install.sh installs them). dubbo-js is a fork of connect-es, so one
// implementation serves on both; only the adapter and the error class differ. One h2c port
// (node:http2, prior knowledge) serves gRPC and the stack's unary HTTP protocol: Connect's
// (JSON errors {"code": "<name>"}) or dubbo-js's Triple wire (JSON errors {"status": <code>},
// the deadline read from tri-service-timeout); both are what triple_py's Triple wire speaks
// (bare body, application/proto, `trailer-` metadata, whole-body gzip).
//
// The messages of proto/grpc/testing/{empty,messages,test}.proto are defined in code with
// @bufbuild/protobuf (no protoc), with the public field names and numbers.
//
// The server side of the standard gRPC interop service:
//   EmptyCall, UnaryCall, StreamingOutputCall, StreamingInputCall, FullDuplexCall,
//   HalfDuplexCall; UnimplementedCall is left out of the implementation (connect answers
//   unimplemented) and grpc.testing.UnimplementedService is not routed (HTTP 404, which
//   clients map to UNIMPLEMENTED).
//   response_status      the call ends with that code and message
//   expect_compressed    checked on every request message (INVALID_ARGUMENT on a mismatch):
//                        the gzip implementation given to connect counts the messages it
//                        inflates for the request (AsyncLocalStorage), so the handler knows
//                        whether each message arrived compressed
//   x-grpc-test-echo-initial       sent back in the response header
//   x-grpc-test-echo-trailing-bin  sent back in the response trailer (`trailer-` prefixed
//                                  header on Connect/Triple unary), value unchanged
//   interval_us          sleep before that response
// response_compressed / ResponseParameters.compressed are NOT honoured: connect-node
// compresses every response message of at least compressMinBytes once the client accepts
// gzip, with no per-call or per-message switch (the interop matrix marks
// server_compressed_* n/a for this peer).
//
// Usage: node interop_test_server.mjs [--stack connect|dubbo] [--host 127.0.0.1] [--port 0]
// Prints `LISTENING <port>`, serves until SIGTERM/SIGINT or EOF on stdin.
import { AsyncLocalStorage } from "node:async_hooks";
import { parseArgs } from "node:util";

import { serveH2c } from "./serve.mjs";

import { MethodKind, proto3 } from "@bufbuild/protobuf";

// The two stacks: their Code enum, error class, gzip and Node adapter.
const STACKS = {
  async connect() {
    const core = await import("@connectrpc/connect");
    const node = await import("@connectrpc/connect-node");
    return { Code: core.Code, RpcError: core.ConnectError, gzip: node.compressionGzip,
             adapter: node.connectNodeAdapter };
  },
  async dubbo() {
    const core = await import("@apachedubbo/dubbo");
    const node = await import("@apachedubbo/dubbo-node");
    return { Code: core.Code, RpcError: core.DubboError, gzip: node.compressionGzip,
             adapter: node.dubboNodeAdapter };
  },
};
const { values: args } = parseArgs({
  options: {
    stack: { type: "string", default: "connect" },
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "0" },
  },
});
if (!Object.hasOwn(STACKS, args.stack)) {
  console.error(`interop peer: unknown --stack ${args.stack} (connect or dubbo)`);
  process.exit(2);
}
const { Code, RpcError, gzip: compressionGzip, adapter: nodeAdapter } =
  await STACKS[args.stack]();

const MAX_MESSAGE = 64 * 1024 * 1024;
const ECHO_INITIAL = "x-grpc-test-echo-initial";
const ECHO_TRAILING = "x-grpc-test-echo-trailing-bin";

// ScalarType numbers of @bufbuild/protobuf (descriptor.proto's FieldDescriptorProto.Type).
const INT32 = 5, BOOL = 8, STRING = 9, BYTES = 12;

// --- messages (grpc/testing/empty.proto, messages.proto) ---------------------------------
const Empty = proto3.makeMessageType("grpc.testing.Empty", []);
const PayloadType = proto3.makeEnumType("grpc.testing.PayloadType", [
  { no: 0, name: "COMPRESSABLE" },
]);
const BoolValue = proto3.makeMessageType("grpc.testing.BoolValue", [
  { no: 1, name: "value", kind: "scalar", T: BOOL },
]);
const Payload = proto3.makeMessageType("grpc.testing.Payload", [
  { no: 1, name: "type", kind: "enum", T: PayloadType },
  { no: 2, name: "body", kind: "scalar", T: BYTES },
]);
const EchoStatus = proto3.makeMessageType("grpc.testing.EchoStatus", [
  { no: 1, name: "code", kind: "scalar", T: INT32 },
  { no: 2, name: "message", kind: "scalar", T: STRING },
]);
const SimpleRequest = proto3.makeMessageType("grpc.testing.SimpleRequest", [
  { no: 1, name: "response_type", kind: "enum", T: PayloadType },
  { no: 2, name: "response_size", kind: "scalar", T: INT32 },
  { no: 3, name: "payload", kind: "message", T: Payload },
  { no: 4, name: "fill_username", kind: "scalar", T: BOOL },
  { no: 5, name: "fill_oauth_scope", kind: "scalar", T: BOOL },
  { no: 6, name: "response_compressed", kind: "message", T: BoolValue },
  { no: 7, name: "response_status", kind: "message", T: EchoStatus },
  { no: 8, name: "expect_compressed", kind: "message", T: BoolValue },
  { no: 9, name: "fill_server_id", kind: "scalar", T: BOOL },
  { no: 10, name: "fill_grpclb_route_type", kind: "scalar", T: BOOL },
]);
const SimpleResponse = proto3.makeMessageType("grpc.testing.SimpleResponse", [
  { no: 1, name: "payload", kind: "message", T: Payload },
  { no: 2, name: "username", kind: "scalar", T: STRING },
  { no: 3, name: "oauth_scope", kind: "scalar", T: STRING },
  { no: 4, name: "server_id", kind: "scalar", T: STRING },
  { no: 6, name: "hostname", kind: "scalar", T: STRING },
]);
const StreamingInputCallRequest = proto3.makeMessageType("grpc.testing.StreamingInputCallRequest", [
  { no: 1, name: "payload", kind: "message", T: Payload },
  { no: 2, name: "expect_compressed", kind: "message", T: BoolValue },
]);
const StreamingInputCallResponse = proto3.makeMessageType(
  "grpc.testing.StreamingInputCallResponse",
  [{ no: 1, name: "aggregated_payload_size", kind: "scalar", T: INT32 }],
);
const ResponseParameters = proto3.makeMessageType("grpc.testing.ResponseParameters", [
  { no: 1, name: "size", kind: "scalar", T: INT32 },
  { no: 2, name: "interval_us", kind: "scalar", T: INT32 },
  { no: 3, name: "compressed", kind: "message", T: BoolValue },
]);
const StreamingOutputCallRequest = proto3.makeMessageType(
  "grpc.testing.StreamingOutputCallRequest",
  [
    { no: 1, name: "response_type", kind: "enum", T: PayloadType },
    { no: 2, name: "response_parameters", kind: "message", T: ResponseParameters, repeated: true },
    { no: 3, name: "payload", kind: "message", T: Payload },
    { no: 7, name: "response_status", kind: "message", T: EchoStatus },
  ],
);
const StreamingOutputCallResponse = proto3.makeMessageType(
  "grpc.testing.StreamingOutputCallResponse",
  [{ no: 1, name: "payload", kind: "message", T: Payload }],
);

// --- the service (grpc/testing/test.proto) -------------------------------------------------
const TestService = {
  typeName: "grpc.testing.TestService",
  methods: {
    emptyCall: { name: "EmptyCall", I: Empty, O: Empty, kind: MethodKind.Unary },
    unaryCall: { name: "UnaryCall", I: SimpleRequest, O: SimpleResponse, kind: MethodKind.Unary },
    streamingOutputCall: {
      name: "StreamingOutputCall", I: StreamingOutputCallRequest, O: StreamingOutputCallResponse,
      kind: MethodKind.ServerStreaming,
    },
    streamingInputCall: {
      name: "StreamingInputCall", I: StreamingInputCallRequest, O: StreamingInputCallResponse,
      kind: MethodKind.ClientStreaming,
    },
    fullDuplexCall: {
      name: "FullDuplexCall", I: StreamingOutputCallRequest, O: StreamingOutputCallResponse,
      kind: MethodKind.BiDiStreaming,
    },
    halfDuplexCall: {
      name: "HalfDuplexCall", I: StreamingOutputCallRequest, O: StreamingOutputCallResponse,
      kind: MethodKind.BiDiStreaming,
    },
    unimplementedCall: { name: "UnimplementedCall", I: Empty, O: Empty, kind: MethodKind.Unary },
  },
};

// --- request compression: gzip that counts what it inflates for the current request -------
const requestState = new AsyncLocalStorage();
const countingGzip = {
  name: "gzip",
  compress: (bytes) => compressionGzip.compress(bytes),
  decompress(bytes, readMaxBytes) {
    const state = requestState.getStore();
    if (state) state.inflated += 1;
    return compressionGzip.decompress(bytes, readMaxBytes);
  },
};

// Tracks, message by message, whether the request messages arrived compressed.
function compressionTracker() {
  const state = requestState.getStore();
  let seen = 0;
  return () => {  // call after each request message: was that one compressed?
    if (!state) throw new RpcError("no request state", Code.Internal);
    const compressed = state.inflated > seen;
    seen = state.inflated;
    return compressed;
  };
}

function checkCompression(expect, compressed) {
  const expected = expect?.value ?? false;
  if (expected !== compressed) {
    throw new RpcError(
      `Compressed request expectation not met: expected ${expected}, got ${compressed}`,
      Code.InvalidArgument);
  }
}

function echoMetadata(ctx) {
  const initial = ctx.requestHeader.get(ECHO_INITIAL);
  if (initial !== null) ctx.responseHeader.set(ECHO_INITIAL, initial);
  const trailing = ctx.requestHeader.get(ECHO_TRAILING);
  if (trailing !== null) ctx.responseTrailer.set(ECHO_TRAILING, trailing);
}

function checkStatus(status) {
  if (status && status.code !== 0) throw new RpcError(status.message, status.code);
}

function payload(size) {
  return new Payload({ type: 0, body: new Uint8Array(Math.max(size, 0)) });
}

function sleepUs(us, signal) {
  return new Promise((resolve) => {
    if (us <= 0 || signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, us / 1000);
    signal.addEventListener("abort", done);
  });
}

async function* respond(request, ctx) {
  checkStatus(request.responseStatus);
  for (const params of request.responseParameters) {
    await sleepUs(params.intervalUs, ctx.signal);
    yield new StreamingOutputCallResponse({ payload: payload(params.size) });
  }
}

const impl = {
  async emptyCall(request, ctx) {
    echoMetadata(ctx);
    return new Empty();
  },
  async unaryCall(request, ctx) {
    const wasCompressed = compressionTracker();
    echoMetadata(ctx);
    checkCompression(request.expectCompressed, wasCompressed());
    checkStatus(request.responseStatus);
    return new SimpleResponse({ payload: payload(request.responseSize) });
  },
  async *streamingOutputCall(request, ctx) {
    echoMetadata(ctx);
    yield* respond(request, ctx);
  },
  async streamingInputCall(requests, ctx) {
    const wasCompressed = compressionTracker();
    echoMetadata(ctx);
    let size = 0;
    for await (const request of requests) {
      checkCompression(request.expectCompressed, wasCompressed());
      size += request.payload?.body.length ?? 0;
    }
    return new StreamingInputCallResponse({ aggregatedPayloadSize: size });
  },
  async *fullDuplexCall(requests, ctx) {
    echoMetadata(ctx);
    for await (const request of requests) {
      yield* respond(request, ctx);
    }
  },
  async *halfDuplexCall(requests, ctx) {
    echoMetadata(ctx);
    const buffered = [];
    for await (const request of requests) buffered.push(request);
    for (const request of buffered) yield* respond(request, ctx);
  },
  // unimplementedCall: left out, connect answers unimplemented.
};

function main() {
  const values = args;
  const adapter = nodeAdapter({
    routes: (router) => router.service(TestService, impl),
    acceptCompression: [countingGzip],
    requireConnectProtocolHeader: false,  // Triple clients send no connect-protocol-version
    readMaxBytes: MAX_MESSAGE,
    writeMaxBytes: MAX_MESSAGE,
  });
  serveH2c((req, res) => requestState.run({ inflated: 0 }, () => adapter(req, res)), {
    host: values.host, port: values.port, name: `interop ${args.stack} peer`,
    // MB: 1,000 concurrent calls and 8 MiB messages on one session
    options: { maxSessionMemory: 1024 },
  });
}

main();
