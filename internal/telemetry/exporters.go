package telemetry

// Building exporters from configuration: one constructor for span
// exporters (JSONL file, stdout, OTLP over HTTP, OTLP over gRPC) and one for
// OCSF queues (JSONL file, HTTP sink), so that the gateway and tests build
// them the same way.
//
//	spans:  the gateway's: Recorder ─End─▶ its queue (bounded, drops, counted) ─▶ its goroutine:
//	        span built (spanrecord.go), batched ─▶ SpanExporter (Options.SpanExporter)
//	        others': Recorder ─▶ TracerProvider ─▶ BatchSpanProcessor (bounded, drops) ─▶ SpanExporter
//	OCSF:   Recorder ─Emit─▶ Queue (bounded, drops) ─▶ EventWriter (JSONL file | HTTPWriter)

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Span exporter kinds (telemetry.spans.exporter).
const (
	SpanExporterJSONL    = "jsonl"     // one JSON object per span and line, to Path
	SpanExporterStdout   = "stdout"    // the same, to standard output
	SpanExporterOTLP     = "otlp"      // OTLP over HTTP (protobuf) to Endpoint, a URL
	SpanExporterOTLPGRPC = "otlp-grpc" // OTLP over gRPC to Endpoint, host:port or a URL
)

// OCSF exporter kinds (telemetry.ocsf.exporter).
const (
	OCSFExporterJSONL = "jsonl" // one event per line, to Path
	OCSFExporterHTTP  = "http"  // batches POSTed to Endpoint (HTTPWriter)
)

// SpanExport says where spans go.
type SpanExport struct {
	Kind string // one of the SpanExporter* constants
	// Path is the file of the jsonl exporter, opened for appending
	// (created with mode 0600).
	Path string
	// Endpoint is the OTLP receiver. For "otlp", a URL such as
	// http://127.0.0.1:4318; a URL without a path gets /v1/traces, any
	// other path is used as it is. For
	// "otlp-grpc", host:port (plaintext only when the host is a loopback
	// address, TLS otherwise) or a URL whose scheme chooses: http for
	// plaintext, https for TLS.
	Endpoint string
	// Logger, if set, is told of every export that fails ("telemetry: span
	// export failed"). Without it a failure reaches only otel.Handle, whose
	// default prints it with the standard log package, outside warden's log.
	Logger *slog.Logger
}

// NewSpanExporter returns the span exporter e describes. Shutting the
// exporter down closes its file, if it has one. Register it with
// NewTracerProvider (or sdktrace.WithBatcher), never with a synchronous
// processor: the batcher's bounded queue is what keeps a slow receiver off
// the call path. A failed export does not fail a call (the batcher drops
// the spans); with e.Logger it is reported there.
func NewSpanExporter(ctx context.Context, e SpanExport) (sdktrace.SpanExporter, error) {
	exp, err := newSpanExporter(ctx, e)
	if err != nil || e.Logger == nil {
		return exp, err
	}
	return reportingExporter{exp, e.Logger}, nil
}

// reportingExporter logs the exports that fail, and passes the error on.
type reportingExporter struct {
	sdktrace.SpanExporter
	log *slog.Logger
}

func (e reportingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.log.Warn("telemetry: span export failed", "spans", len(spans), "err", err)
	}
	return err
}

func newSpanExporter(ctx context.Context, e SpanExport) (sdktrace.SpanExporter, error) {
	switch e.Kind {
	case SpanExporterStdout:
		return NewSpanWriter(os.Stdout)
	case SpanExporterJSONL:
		f, err := os.OpenFile(e.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		exp, err := NewSpanWriter(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		return fileSpanExporter{exp, f}, nil
	case SpanExporterOTLP:
		u, err := url.Parse(e.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("telemetry: OTLP/HTTP endpoint %q: want an http(s) URL such as http://127.0.0.1:4318", e.Endpoint)
		}
		// otlptracehttp.WithEndpointURL uses the URL's path as it is, so a
		// bare http://host:4318 would be posted to "/", which a collector
		// answers with 404. A base URL gets the signal's path, as with
		// OTEL_EXPORTER_OTLP_ENDPOINT.
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	case SpanExporterOTLPGRPC:
		opts, err := grpcEndpoint(e.Endpoint)
		if err != nil {
			return nil, err
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("telemetry: unknown span exporter %q", e.Kind)
}

// grpcEndpoint turns an otlp-grpc endpoint into exporter options: see
// SpanExport.Endpoint.
func grpcEndpoint(endpoint string) ([]otlptracegrpc.Option, error) {
	bad := func(why string) error {
		return fmt.Errorf("telemetry: OTLP/gRPC endpoint %q: %s; want host:port such as 127.0.0.1:4317, or http(s)://host:port", endpoint, why)
	}
	hostport, insecure := endpoint, false
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, bad(err.Error())
		}
		switch u.Scheme {
		case "http":
			insecure = true
		case "https":
		default:
			return nil, bad("scheme must be http or https")
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, bad("a gRPC endpoint has no path, query or credentials")
		}
		hostport = u.Host
		if u.Port() == "" {
			return nil, bad("no port")
		}
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" || port == "" {
		return nil, bad("no host:port")
	}
	if !strings.Contains(endpoint, "://") {
		insecure = isLoopback(host)
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(hostport)}
	if insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	return opts, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fileSpanExporter closes its file after the exporter has shut down.
type fileSpanExporter struct {
	sdktrace.SpanExporter
	f *os.File
}

func (e fileSpanExporter) Shutdown(ctx context.Context) error {
	return errors.Join(e.SpanExporter.Shutdown(ctx), e.f.Close())
}

// NewTracerProvider returns a tracer provider that sends spans to exp
// through a BatchSpanProcessor (bounded queue; a full queue drops spans
// instead of blocking a call), with service.name "warden" on every span's
// resource, so that a backend shows warden's spans under its name.
func NewTracerProvider(exp sdktrace.SpanExporter, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	opts = append([]sdktrace.TracerProviderOption{sdktrace.WithResource(wardenResource()), sdktrace.WithBatcher(exp)}, opts...)
	return sdktrace.NewTracerProvider(opts...)
}

// wardenResource is the resource of warden's spans: service.name "warden".
func wardenResource() *resource.Resource {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", "warden")))
	if err != nil { // cannot happen: the second resource has no schema URL
		return resource.Default()
	}
	return res
}

// OCSFExport says where OCSF events go.
type OCSFExport struct {
	Kind     string // one of the OCSFExporter* constants
	Path     string // the jsonl exporter's file (appended to, mode 0600)
	Endpoint string // the http exporter's URL (see HTTPWriter)
	// NDJSON makes the http exporter send newline-delimited JSON instead
	// of a JSON array.
	NDJSON bool
}

// NewOCSFQueue returns a Queue in front of the writer e describes. Closing
// the queue drains it and then closes the writer (the file).
func NewOCSFQueue(e OCSFExport, opts QueueOptions) (*Queue, error) {
	switch e.Kind {
	case OCSFExporterJSONL:
		f, err := os.OpenFile(e.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		return NewQueue(jsonlFile{JSONLWriter{W: f}, f}, opts), nil
	case OCSFExporterHTTP:
		w, err := NewHTTPWriter(e.Endpoint)
		if err != nil {
			return nil, err
		}
		w.NDJSON = e.NDJSON
		return NewQueue(w, opts), nil
	}
	return nil, fmt.Errorf("telemetry: unknown OCSF exporter %q", e.Kind)
}

// jsonlFile is a JSONLWriter that owns its file.
type jsonlFile struct {
	JSONLWriter
	f *os.File
}

func (j jsonlFile) Close() error { return j.f.Close() }
