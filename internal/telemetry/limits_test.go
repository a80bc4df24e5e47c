package telemetry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// naiveValidDistinct is validDistinct by comparing every pair.
func naiveValidDistinct(a, extra []attribute.KeyValue) bool {
	all := append(append([]attribute.KeyValue(nil), a...), extra...)
	for i, kv := range all {
		if !kv.Valid() {
			return false
		}
		for _, o := range all[:i] {
			if o.Key == kv.Key {
				return false
			}
		}
	}
	return true
}

// TestValidDistinct holds validDistinct to comparing every pair, on key
// sets built to share its table's slots (same length, first and last
// byte) and to repeat keys across a and extra.
func TestValidDistinct(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "ab", "ba", "aXb", "aYb", "aZb", "warden.rule", "warden.jti", "aitf.mcp.tool.name", "aitf.mcp.tool.nome", "x"}
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("k%02d.z", i)) // same length, first and last byte
	}
	for round := range 5000 {
		pick := func(n int) []attribute.KeyValue {
			kvs := make([]attribute.KeyValue, n)
			for i := range kvs {
				kvs[i] = attribute.String(keys[rng.IntN(len(keys))], "v")
				if rng.IntN(200) == 0 {
					kvs[i] = attribute.KeyValue{} // invalid
				}
			}
			return kvs
		}
		a, extra := pick(rng.IntN(12)), pick(rng.IntN(3))
		if round%3 == 0 { // distinct keys, often all of a span's worth
			perm := rng.Perm(len(keys))
			a = a[:0]
			for _, j := range perm[:rng.IntN(len(keys))] {
				a = append(a, attribute.String(keys[j], "v"))
			}
			extra = nil
		}
		if got, want := validDistinct(a, extra), naiveValidDistinct(a, extra); got != want {
			t.Fatalf("validDistinct(%v, %v) = %v, want %v", a, extra, got, want)
		}
	}
	many := make([]attribute.KeyValue, 65)
	for i := range many {
		many[i] = attribute.Int(fmt.Sprint("key", i), i)
	}
	if validDistinct(many, nil) {
		t.Error("65 attributes: want false, the general path, past the table's size")
	}
}

// TestLimitAttributesFastPathIsTheGeneralOne: under the default limits,
// a tools/call's attributes (distinct, valid) come out of limitAttributes
// as the general path makes them.
func TestLimitAttributesFastPathIsTheGeneralOne(t *testing.T) {
	a := toolCallAttributes(t)
	extra := []attribute.KeyValue{attribute.Int("aitf.security.findings", 1)}
	n := &nativeSpans{limits: sdktrace.NewSpanLimits()}
	got, dropped := n.limitAttributes(a, extra)
	general := &nativeSpans{limits: sdktrace.NewSpanLimits()}
	general.limits.AttributeValueLengthLimit = 1 << 30 // cuts nothing, takes the general path
	want, wantDropped := general.limitAttributes(a, extra)
	if !reflect.DeepEqual(got, want) || dropped != wantDropped {
		t.Errorf("fast path %v (%d dropped), general %v (%d)", got, dropped, want, wantDropped)
	}
	if len(got) != len(a)+1 {
		t.Errorf("%d attributes, want %d", len(got), len(a)+1)
	}
}

// toolCallAttributes are the attributes of the golden tools/call span.
func toolCallAttributes(t testing.TB) []attribute.KeyValue {
	exp := &captureExporter{}
	op := *goldens["aitf.mcp.tool.invoke"].op
	NewRecorder(Options{SpanExporter: exp}).Record(context.Background(), &op)
	spans := exp.got()
	if len(spans) != 1 || len(spans[0].Attributes) < 20 {
		t.Fatalf("the golden tools/call gave %d spans", len(spans))
	}
	return spans[0].Attributes
}

// BenchmarkLimitAttributes: a tools/call's attributes under the default
// limits (fast) and through the general path (general), as before.
func BenchmarkLimitAttributes(b *testing.B) {
	a := toolCallAttributes(b)
	for _, bc := range []struct {
		name string
		cut  int
	}{{"fast", -1}, {"general", 1 << 30}} {
		b.Run(bc.name, func(b *testing.B) {
			n := &nativeSpans{limits: sdktrace.NewSpanLimits()}
			n.limits.AttributeValueLengthLimit = bc.cut
			b.ReportAllocs()
			for b.Loop() {
				n.limitAttributes(a, nil)
			}
		})
	}
}
