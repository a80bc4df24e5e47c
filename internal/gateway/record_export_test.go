package gateway

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentwarden/warden/internal/telemetry"
)

// failingExporter refuses every batch, as an unreachable collector does.
type failingExporter struct{}

func (failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	return errors.New("collector unreachable")
}
func (failingExporter) Shutdown(context.Context) error { return nil }

// Spans whose export failed are on the metrics page, not only in the log.
func TestMetricsShowFailedSpanExports(t *testing.T) {
	rec := telemetry.NewRecorder(telemetry.Options{SpanExporter: failingExporter{}, Deferred: 8})
	for range 2 {
		rec.Record(context.Background(), &telemetry.Operation{Method: "ping", RequestID: "1"})
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	(&Metrics{Recording: rec}).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if want := "\nwarden_telemetry_failed_total{signal=\"spans\"} 2\n"; !strings.Contains(w.Body.String(), want) {
		t.Errorf("metrics lack %q:\n%s", want, w.Body.String())
	}
}

// keepUp waits, sleeping, until rec has ended all but ahead of the
// 1 span of each of calls (the request's span, ended with its answer).
func keepUp(rec *telemetry.Recorder, calls, ahead uint64) {
	for calls > ahead && rec.Stats().Ended+ahead < calls {
		time.Sleep(20 * time.Microsecond)
	}
}
