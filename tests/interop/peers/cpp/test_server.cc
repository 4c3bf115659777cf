// The gRPC C++ interop peer: grpc.testing.TestService on libgrpc++ (Debian 1.51).
//
// The server side of the standard gRPC interop service (proto/grpc/testing/test.proto), as
// grpc/grpc's test/cpp/interop/interop_server.cc does it:
//   EmptyCall, UnaryCall, StreamingOutputCall, StreamingInputCall, FullDuplexCall,
//   HalfDuplexCall; UnimplementedCall is left to the generated base class (UNIMPLEMENTED)
//   and grpc.testing.UnimplementedService is not registered.
//   response_status       the call ends with that code and message
//   response_compressed   gzip for the call (UnaryCall); ResponseParameters.compressed:
//                         gzip for the call, WriteOptions::set_no_compression() per message
//   expect_compressed     checked on every request message: a mismatch is INVALID_ARGUMENT
//                         (the message's compression flag, read the way the interop
//                         server's InteropServerContextInspector does, see below)
//   x-grpc-test-echo-initial       sent back in the initial metadata
//   x-grpc-test-echo-trailing-bin  sent back in the trailing metadata
//   interval_us           sleep before that response
//
// Build (testing/triple_py_testing/interop/peers.py does it, into .build/interop/cpp/):
//   protoc --cpp_out --grpc_out (grpc_cpp_plugin) on proto/grpc/testing/*.proto, then
//   g++ -std=c++17 $(pkg-config --cflags --libs grpc++ protobuf)
// Usage: test_server [--host 127.0.0.1] [--port 0]
// Prints "LISTENING <port>", serves until SIGTERM/SIGINT or EOF on stdin.

#include <grpc/compression.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.grpc.pb.h"

// Exported by libgrpc (src/core/lib/surface/call_test_only.h, C++ linkage): what grpc's own
// interop server uses to see whether the last received message was compressed.
grpc_compression_algorithm grpc_call_test_only_get_compression_algorithm(grpc_call* call);
uint32_t grpc_call_test_only_get_message_flags(grpc_call* call);
// src/core/lib/transport/transport.h
#define GRPC_WRITE_INTERNAL_COMPRESS (0x80000000u)
#define GRPC_WRITE_INTERNAL_TEST_ONLY_WAS_COMPRESSED (0x40000000u)

namespace grpc {
namespace testing {
// grpc::ServerContext declares this class its friend (grpcpp/server_context.h) for the
// interop server; defining it here gives the same access to the call.
class InteropServerContextInspector {
 public:
  explicit InteropServerContextInspector(const ServerContext& context) : context_(context) {}
  grpc_compression_algorithm CallCompressionAlgorithm() const {
    return grpc_call_test_only_get_compression_algorithm(context_.call_.call);
  }
  bool WasCompressed() const {
    uint32_t flags = grpc_call_test_only_get_message_flags(context_.call_.call);
    return (flags & (GRPC_WRITE_INTERNAL_COMPRESS |
                     GRPC_WRITE_INTERNAL_TEST_ONLY_WAS_COMPRESSED)) != 0;
  }

 private:
  const ServerContext& context_;
};
}  // namespace testing
}  // namespace grpc

namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
using grpc::testing::Empty;
using grpc::testing::EchoStatus;
using grpc::testing::Payload;
using grpc::testing::ResponseParameters;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

constexpr int kMaxMessage = 64 * 1024 * 1024;
const char kEchoInitial[] = "x-grpc-test-echo-initial";
const char kEchoTrailingBin[] = "x-grpc-test-echo-trailing-bin";

void EchoMetadata(ServerContext* context) {
  const auto& md = context->client_metadata();
  auto it = md.find(kEchoInitial);
  if (it != md.end()) {
    context->AddInitialMetadata(kEchoInitial, std::string(it->second.data(), it->second.size()));
  }
  it = md.find(kEchoTrailingBin);
  if (it != md.end()) {
    context->AddTrailingMetadata(kEchoTrailingBin,
                                 std::string(it->second.data(), it->second.size()));
  }
}

// The request's expect_compressed against what arrived (interop CompressedRequest feature).
bool CompressionAsExpected(const ServerContext& context, bool expected) {
  grpc::testing::InteropServerContextInspector inspector(context);
  if (expected) {
    return inspector.CallCompressionAlgorithm() != GRPC_COMPRESS_NONE &&
           inspector.WasCompressed();
  }
  return !inspector.WasCompressed();
}

Status EchoedStatus(const EchoStatus& s) {
  return Status(static_cast<StatusCode>(s.code()), s.message());
}

void SetPayload(int size, Payload* payload) {
  payload->set_type(grpc::testing::COMPRESSABLE);
  payload->set_body(std::string(size > 0 ? size : 0, '\0'));
}

void SleepUs(int us) {
  if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

template <typename Writer>
bool Respond(ServerContext* context, const StreamingOutputCallRequest& request, Writer* w) {
  for (const ResponseParameters& p : request.response_parameters()) {
    StreamingOutputCallResponse response;
    SetPayload(p.size(), response.mutable_payload());
    grpc::WriteOptions options;
    if (p.has_compressed()) {
      context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      if (!p.compressed().value()) options.set_no_compression();
    }
    SleepUs(p.interval_us());
    if (!w->Write(response, options)) return false;
  }
  return true;
}

class TestServiceImpl final : public grpc::testing::TestService::Service {
 public:
  Status EmptyCall(ServerContext* context, const Empty*, Empty*) override {
    EchoMetadata(context);
    return Status::OK;
  }

  Status UnaryCall(ServerContext* context, const SimpleRequest* request,
                   SimpleResponse* response) override {
    EchoMetadata(context);
    if (request->has_response_compressed()) {
      context->set_compression_algorithm(request->response_compressed().value()
                                             ? GRPC_COMPRESS_GZIP
                                             : GRPC_COMPRESS_NONE);
    }
    if (!CompressionAsExpected(*context, request->expect_compressed().value())) {
      return Status(StatusCode::INVALID_ARGUMENT, "Compressed request expectation not met.");
    }
    if (request->response_status().code() != 0) return EchoedStatus(request->response_status());
    SetPayload(request->response_size(), response->mutable_payload());
    return Status::OK;
  }

  Status StreamingOutputCall(
      ServerContext* context, const StreamingOutputCallRequest* request,
      grpc::ServerWriter<StreamingOutputCallResponse>* writer) override {
    EchoMetadata(context);
    if (request->response_status().code() != 0) return EchoedStatus(request->response_status());
    if (!Respond(context, *request, writer)) {
      return Status(StatusCode::INTERNAL, "Error writing response.");
    }
    return Status::OK;
  }

  Status StreamingInputCall(ServerContext* context,
                            grpc::ServerReader<StreamingInputCallRequest>* reader,
                            StreamingInputCallResponse* response) override {
    EchoMetadata(context);
    StreamingInputCallRequest request;
    int aggregated = 0;
    while (reader->Read(&request)) {
      if (!CompressionAsExpected(*context, request.expect_compressed().value())) {
        return Status(StatusCode::INVALID_ARGUMENT, "Compressed request expectation not met.");
      }
      aggregated += static_cast<int>(request.payload().body().size());
    }
    response->set_aggregated_payload_size(aggregated);
    return Status::OK;
  }

  Status FullDuplexCall(ServerContext* context,
                        grpc::ServerReaderWriter<StreamingOutputCallResponse,
                                                 StreamingOutputCallRequest>* stream) override {
    EchoMetadata(context);
    StreamingOutputCallRequest request;
    while (stream->Read(&request)) {
      if (request.response_status().code() != 0) return EchoedStatus(request.response_status());
      if (!Respond(context, request, stream)) {
        return Status(StatusCode::INTERNAL, "Error writing response.");
      }
    }
    return Status::OK;
  }

  Status HalfDuplexCall(ServerContext* context,
                        grpc::ServerReaderWriter<StreamingOutputCallResponse,
                                                 StreamingOutputCallRequest>* stream) override {
    EchoMetadata(context);
    std::vector<StreamingOutputCallRequest> requests;
    StreamingOutputCallRequest request;
    while (stream->Read(&request)) requests.push_back(request);
    for (const auto& r : requests) {
      if (r.response_status().code() != 0) return EchoedStatus(r.response_status());
      if (!Respond(context, r, stream)) {
        return Status(StatusCode::INTERNAL, "Error writing response.");
      }
    }
    return Status::OK;
  }
};

std::mutex g_mu;
std::condition_variable g_cv;
bool g_stop = false;

void RequestStop() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_stop = true;
  g_cv.notify_all();
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--host") == 0) {
      host = argv[i + 1];
    } else if (std::strcmp(argv[i], "--port") == 0) {
      port = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: %s [--host H] [--port P]\n", argv[0]);
      return 2;
    }
  }
  // SIGTERM/SIGINT are taken by a sigwait thread: block them before gRPC starts threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  TestServiceImpl service;
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(host + ":" + std::to_string(port), grpc::InsecureServerCredentials(),
                           &bound);
  builder.SetMaxReceiveMessageSize(kMaxMessage);
  builder.SetMaxSendMessageSize(kMaxMessage);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound == 0) {
    std::fprintf(stderr, "cannot bind %s:%d\n", host.c_str(), port);
    return 1;
  }
  std::thread([signals]() {
    int sig = 0;
    sigwait(&signals, &sig);
    RequestStop();
  }).detach();
  std::thread([]() {
    char buf[4096];
    while (read(0, buf, sizeof buf) > 0) {
    }
    RequestStop();
  }).detach();
  std::printf("LISTENING %d\n", bound);
  std::fflush(stdout);
  {
    std::unique_lock<std::mutex> lock(g_mu);
    g_cv.wait(lock, [] { return g_stop; });
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server->Wait();
  return 0;
}
