// Command echo_server is the grpc-go test peer: benchmark.BenchmarkService on raw bytes.
//
// It follows tests/peers/README.md: UnaryCall echoes the request bytes, StreamCall echoes
// each request message, and the control metadata (x-echo-*, x-status, x-message,
// x-message-bin, x-delay-ms, x-response-size, x-response-header-size,
// x-response-trailer-size, x-response-header-count) changes the answer. It prints
// "LISTENING <port>" once it accepts connections and serves until SIGTERM/SIGINT or EOF on
// stdin.
//
// TLS: -tls-cert PEM -tls-key PEM serve TLS (ALPN h2) with that identity instead of
// plaintext h2c; -tls-client-ca PEM also requires a client certificate signed by that CA
// (mTLS). -compress-responses gzip-compresses every response message (otherwise responses
// are compressed only when the request was).
//
// Debian's grpc-go is 1.33, which has no ForceServerCodec: the raw codec is installed with
// grpc.CustomCodec, which overrides the codec lookup by content-subtype for every request.
// No generated code is used: the ServiceDesc below is written by hand.
//
// Schema and reflection: -schema FILE (a FileDescriptorSet, as protoc --include_imports
// --descriptor_set_out writes) also serves every service of every file in it, each method
// echoing in its own shape (unary and server streaming: the request back; client streaming:
// the last request; bidi: each request), and registers server reflection
// (grpc.reflection.v1alpha, the only version grpc-go 1.33 has) describing them. The files
// of the set must not import files outside it.
//
// Build: GO111MODULE=off GOPATH=/usr/share/gocode go build -o echo_server echo_server.go
// (or tests/peers/build_go.sh OUTDIR).
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/golang/protobuf/proto"
	dpb "github.com/golang/protobuf/protoc-gen-go/descriptor"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // accept (and answer) gzip-compressed messages
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

const (
	maxMessage = 64 << 20
	maxDelayMs = 3600000
	maxFiller  = 1 << 20 // x-response-header-size / x-response-trailer-size
	maxFillers = 64      // x-response-header-count
)

// rawCodec passes message bytes through unchanged: requests decode into *[]byte and
// responses are []byte. Generated messages (the reflection service's) use protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) {
	switch m := v.(type) {
	case []byte:
		return m, nil
	case *[]byte:
		return *m, nil
	case proto.Message:
		return proto.Marshal(m)
	}
	return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	if m, isMsg := v.(proto.Message); isMsg {
		return proto.Unmarshal(data, m)
	}
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*p = data
	return nil
}

func (rawCodec) String() string { return "raw" }

// control is what a call's request metadata asks the server to do.
type control struct {
	echo         metadata.MD // x-echo-* pairs, sent back in header and trailer
	hasStatus    bool
	code         codes.Code
	message      string
	delay        time.Duration
	responseSize int // -1: echo the request
	headerSize   int // x-response-header-size: filler bytes per value in the header
	trailerSize  int // x-response-trailer-size: the same in the trailer
	fillerCount  int // x-response-header-count: filler values in each (default 1)
}

// intControl parses the non-negative integer control `key` (at most max); def without it.
func intControl(md metadata.MD, key string, max, def int) (int, error) {
	s, ok := lastValue(md, key)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > max {
		return 0, status.Errorf(codes.InvalidArgument, "bad %s %q", key, s)
	}
	return n, nil
}

// fillers adds count values x-filler-<i> of size bytes of "f" to md (nothing for size 0).
func fillers(md metadata.MD, size, count int) {
	if size == 0 {
		return
	}
	v := strings.Repeat("f", size)
	for i := 0; i < count; i++ {
		md.Append("x-filler-"+strconv.Itoa(i), v)
	}
}

func lastValue(md metadata.MD, key string) (string, bool) {
	v := md.Get(key)
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

func parseControl(ctx context.Context) (*control, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	c := &control{echo: metadata.MD{}, responseSize: -1}
	for k, v := range md {
		if strings.HasPrefix(k, "x-echo-") {
			c.echo[k] = v
		}
	}
	if s, ok := lastValue(md, "x-status"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 || n > 16 {
			return nil, status.Errorf(codes.InvalidArgument, "bad x-status %q", s)
		}
		c.hasStatus, c.code = true, codes.Code(n)
	}
	if s, ok := lastValue(md, "x-message-bin"); ok {
		c.message = s // the transport has already base64-decoded -bin values
	} else if s, ok := lastValue(md, "x-message"); ok {
		c.message = s
	}
	if s, ok := lastValue(md, "x-delay-ms"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 || n > maxDelayMs {
			return nil, status.Errorf(codes.InvalidArgument, "bad x-delay-ms %q", s)
		}
		c.delay = time.Duration(n) * time.Millisecond
	}
	if s, ok := lastValue(md, "x-response-size"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 || n > maxMessage {
			return nil, status.Errorf(codes.InvalidArgument, "bad x-response-size %q", s)
		}
		c.responseSize = n
	}
	var err error
	if c.headerSize, err = intControl(md, "x-response-header-size", maxFiller, 0); err != nil {
		return nil, err
	}
	if c.trailerSize, err = intControl(md, "x-response-trailer-size", maxFiller, 0); err != nil {
		return nil, err
	}
	if c.fillerCount, err = intControl(md, "x-response-header-count", maxFillers, 1); err != nil {
		return nil, err
	}
	return c, nil
}

// begin sleeps for x-delay-ms (cut short if the call ends) and sends the echoed metadata.
func (c *control) begin(ctx context.Context, sendHeader func(metadata.MD) error, setTrailer func(metadata.MD) error) error {
	if c.delay > 0 {
		t := time.NewTimer(c.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	header, trailer := c.echo.Copy(), c.echo.Copy()
	fillers(header, c.headerSize, c.fillerCount)
	fillers(trailer, c.trailerSize, c.fillerCount)
	if len(header) > 0 {
		if err := sendHeader(header); err != nil {
			return err
		}
	}
	if len(trailer) > 0 {
		if err := setTrailer(trailer); err != nil {
			return err
		}
	}
	return nil
}

// statusErr is the call's end for x-status (nil for OK).
func (c *control) statusErr() error {
	if c.code == codes.OK {
		return nil
	}
	return status.Error(c.code, c.message)
}

// response is the answer to one request message: the request itself, or an encoded
// BenchmarkResponse{payload: N x "a"} for x-response-size: N.
func (c *control) response(req []byte) []byte {
	if c.responseSize < 0 {
		return req
	}
	return encodePayload(c.responseSize)
}

func encodePayload(n int) []byte {
	if n == 0 {
		return []byte{} // proto3 omits an empty bytes field
	}
	out := []byte{0x0a} // field 1, wire type 2
	for v := uint64(n); ; v >>= 7 {
		if v < 0x80 {
			out = append(out, byte(v))
			break
		}
		out = append(out, byte(v)|0x80)
	}
	for i := 0; i < n; i++ {
		out = append(out, 'a')
	}
	return out
}

func unaryCall(_ interface{}, ctx context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
	var req []byte
	if err := dec(&req); err != nil {
		return nil, err
	}
	c, err := parseControl(ctx)
	if err != nil {
		return nil, err
	}
	sendHeader := func(md metadata.MD) error { return grpc.SendHeader(ctx, md) }
	setTrailer := func(md metadata.MD) error { return grpc.SetTrailer(ctx, md) }
	if err := c.begin(ctx, sendHeader, setTrailer); err != nil {
		return nil, err
	}
	if c.hasStatus {
		// A unary call that ends OK carries exactly one message: an empty one here.
		if err := c.statusErr(); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	return c.response(req), nil
}

// beginStream reads the stream's controls and sends its headers. A nil control means the
// stream ends now, with the returned error (a bad control, or the status it asked for).
func beginStream(stream grpc.ServerStream) (*control, error) {
	c, err := parseControl(stream.Context())
	if err != nil {
		return nil, err
	}
	setTrailer := func(md metadata.MD) error { stream.SetTrailer(md); return nil }
	if err := c.begin(stream.Context(), stream.SendHeader, setTrailer); err != nil {
		return nil, err
	}
	if c.hasStatus {
		return nil, c.statusErr()
	}
	return c, nil
}

func streamCall(_ interface{}, stream grpc.ServerStream) error {
	c, err := beginStream(stream)
	if c == nil {
		return err
	}
	for {
		var req []byte
		if err := stream.RecvMsg(&req); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := stream.SendMsg(c.response(req)); err != nil {
			return err
		}
	}
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "benchmark.BenchmarkService",
	HandlerType: (*interface{})(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "UnaryCall", Handler: unaryCall}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "StreamCall",
		Handler:       streamCall,
		ServerStreams: true,
		ClientStreams: true,
	}},
	Metadata: "benchmark.proto",
}

// clientStreamCall answers a client stream with its last request (empty without one).
func clientStreamCall(_ interface{}, stream grpc.ServerStream) error {
	c, err := beginStream(stream)
	if c == nil {
		return err
	}
	last := []byte{}
	for {
		var req []byte
		if err := stream.RecvMsg(&req); err == io.EOF {
			return stream.SendMsg(c.response(last))
		} else if err != nil {
			return err
		}
		last = req
	}
}

// schemaServices reads a FileDescriptorSet and returns a ServiceDesc per service in it,
// each carrying its file's gzipped FileDescriptorProto for reflection; every file is also
// registered by name (reflection's file_by_filename and imports).
func schemaServices(path string) ([]grpc.ServiceDesc, error) {
	raw, err := ioutil.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var set dpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("%s: not a FileDescriptorSet: %v", path, err)
	}
	var descs []grpc.ServiceDesc
	for _, fd := range set.File {
		enc, err := proto.Marshal(fd)
		if err != nil {
			return nil, err
		}
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		zw.Write(enc)
		zw.Close()
		proto.RegisterFile(fd.GetName(), zipped.Bytes()) // file_by_filename and imports
		for _, svc := range fd.Service {
			name := svc.GetName()
			if fd.GetPackage() != "" {
				name = fd.GetPackage() + "." + name
			}
			d := grpc.ServiceDesc{ServiceName: name, HandlerType: (*interface{})(nil),
				Metadata: zipped.Bytes()}
			for _, m := range svc.Method {
				cs, ss := m.GetClientStreaming(), m.GetServerStreaming()
				switch {
				case !cs && !ss:
					d.Methods = append(d.Methods, grpc.MethodDesc{MethodName: m.GetName(), Handler: unaryCall})
				case cs && !ss:
					d.Streams = append(d.Streams, grpc.StreamDesc{StreamName: m.GetName(),
						Handler: clientStreamCall, ClientStreams: true})
				default:
					d.Streams = append(d.Streams, grpc.StreamDesc{StreamName: m.GetName(),
						Handler: streamCall, ClientStreams: cs, ServerStreams: ss})
				}
			}
			descs = append(descs, d)
		}
	}
	return descs, nil
}

// tlsCredentials loads the server identity and, with a client CA, requires and verifies
// client certificates.
func tlsCredentials(certFile, keyFile, clientCAFile string) (credentials.TransportCredentials, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	config := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	if clientCAFile != "" {
		pem, err := ioutil.ReadFile(clientCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("no PEM certificate in " + clientCAFile)
		}
		config.ClientAuth = tls.RequireAndVerifyClientCert
		config.ClientCAs = pool
	}
	return credentials.NewTLS(config), nil
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to bind")
	port := flag.Int("port", 0, "port to bind (0: a free port)")
	tlsCert := flag.String("tls-cert", "", "PEM certificate chain: serve TLS")
	tlsKey := flag.String("tls-key", "", "PEM private key of -tls-cert")
	tlsClientCA := flag.String("tls-client-ca", "", "PEM CA: require client certificates (mTLS)")
	compressResponses := flag.Bool("compress-responses", false, "gzip every response message")
	streamWorkers := flag.Uint("stream-workers", 0,
		"serve streams on this many long-lived goroutines (grpc.NumStreamWorkers); 0: a goroutine per stream, grpc-go's default")
	schema := flag.String("schema", "", "FileDescriptorSet: serve its services (echo) with server reflection")
	flag.Parse()

	opts := []grpc.ServerOption{
		grpc.CustomCodec(rawCodec{}),
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.MaxSendMsgSize(maxMessage),
	}
	if (*tlsCert == "") != (*tlsKey == "") || (*tlsClientCA != "" && *tlsCert == "") {
		fmt.Fprintln(os.Stderr, "-tls-cert and -tls-key go together; -tls-client-ca needs both")
		os.Exit(2)
	}
	if *tlsCert != "" {
		creds, err := tlsCredentials(*tlsCert, *tlsKey, *tlsClientCA)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tls:", err)
			os.Exit(1)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	if *compressResponses {
		opts = append(opts, grpc.RPCCompressor(grpc.NewGZIPCompressor()))
	}
	if *streamWorkers > 0 {
		opts = append(opts, grpc.NumStreamWorkers(uint32(*streamWorkers)))
	}

	lis, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	s := grpc.NewServer(opts...)
	s.RegisterService(&serviceDesc, struct{}{})
	if *schema != "" {
		descs, err := schemaServices(*schema)
		if err != nil {
			fmt.Fprintln(os.Stderr, "schema:", err)
			os.Exit(1)
		}
		for i := range descs {
			s.RegisterService(&descs[i], struct{}{})
		}
		reflection.Register(s)
	}

	stop := make(chan struct{}, 2)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sigs; stop <- struct{}{} }()
	go func() { io.Copy(ioutil.Discard, os.Stdin); stop <- struct{}{} }()
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()

	fmt.Printf("LISTENING %d\n", lis.Addr().(*net.TCPAddr).Port)
	select {
	case <-stop:
		s.Stop()
	case err := <-served:
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}
