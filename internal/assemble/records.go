package assemble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// deferredSpans is how many operations wait, at most, for the Recorder's
// goroutine to end their spans (telemetry.Options.Deferred): at the
// few tens of µs each takes, a tenth of a second of a busy gateway's
// calls. Beyond it spans are dropped and counted
// (warden_telemetry_dropped_total).
const deferredSpans = 4096

// records builds the Recorder of cfg's audit log and telemetry, or nil when
// neither is on, and what to close when the gateway stops, each provided
// to l as it opens. Closers run in order: telemetry flushes before the
// audit log closes.
func records(cfg *config.Config, logger *slog.Logger, l *lifecycle) (*gateway.Records, []io.Closer, error) {
	a, t := cfg.Gateway.Audit, cfg.Telemetry
	spansOn, ocsfOn := t.Spans.Exporter != "none" && t.Spans.Exporter != "", t.OCSF.Exporter != "none" && t.OCSF.Exporter != ""
	if !a.Enabled && !spansOn && !ocsfOn && !t.Metrics {
		return nil, nil, nil
	}
	rs := &gateway.Records{Propagate: t.Propagate, Transport: telemetry.TransportStreamableHTTP,
		URLs: serverURLs(cfg.Gateway.Upstreams), Transports: serverTransports(cfg.Gateway.Upstreams)}
	if t.Metrics {
		rs.Metrics = &gateway.Metrics{}
	}
	var closers []io.Closer
	opened := func(c io.Closer) {
		closers = append(closers, c)
		l.provide(c)
	}
	// inDataDir is name in the data directory: the default of every file.
	inDataDir := func(name string) (string, error) {
		dir := cfg.Gateway.ZeroTrust.DataDir
		if dir == "" {
			dir = zerotrust.DefaultDataDir()
		}
		if dir == "" {
			return "", errors.New("no path and no data directory: set its path, zero_trust.data_dir or WARDEN_DATA_DIR")
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		return filepath.Join(dir, name), nil
	}
	fail := func(err error) (*gateway.Records, []io.Closer, error) { return nil, nil, err }
	if spansOn || ocsfOn {
		opts := telemetry.Options{Capture: telemetry.Capture{Mode: telemetry.CaptureMode(t.Capture)}, Logger: logger,
			Product: ocsf.Product{Name: "warden", VendorName: "agentwarden"}}
		for _, c := range t.Conventions {
			opts.Conventions = append(opts.Conventions, telemetry.Convention(c))
		}
		// The Recorder makes its spans itself and hands them to the
		// exporter; with spans off, it still makes span contexts
		// (propagation, OCSF's ids) and builds no span. The exporter's
		// file, if any, closes when the Recorder closes.
		opts.SpanExporter = telemetry.NoSpans
		if spansOn {
			path := t.Spans.Path
			if t.Spans.Exporter == "jsonl" && path == "" {
				var err error
				if path, err = inDataDir("spans.jsonl"); err != nil {
					return fail(fmt.Errorf("telemetry.spans: %w", err))
				}
			}
			exp, err := telemetry.NewSpanExporter(context.Background(), telemetry.SpanExport{
				Kind: t.Spans.Exporter, Path: path, Endpoint: t.Spans.Endpoint, Logger: logger})
			if err != nil {
				return fail(fmt.Errorf("telemetry.spans: %w", err))
			}
			opts.SpanExporter = exp
		}
		// Spans end off the call's path, on the Recorder's goroutine.
		opts.Deferred = deferredSpans
		var rec *telemetry.Recorder
		// First closer: the Recorder's last spans end and are exported,
		// and the exporter shuts down, before the OCSF queue drains and
		// before the audit log closes.
		opened(closerFunc(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if rec == nil { // NewRecorder not reached: the exporter is ours to shut down
				return opts.SpanExporter.Shutdown(ctx)
			}
			return rec.Close(ctx)
		}))
		if ocsfOn {
			path := t.OCSF.Path
			if t.OCSF.Exporter == "jsonl" && path == "" {
				var err error
				if path, err = inDataDir("ocsf.jsonl"); err != nil {
					return fail(fmt.Errorf("telemetry.ocsf: %w", err))
				}
			}
			q, err := telemetry.NewOCSFQueue(telemetry.OCSFExport{
				Kind: t.OCSF.Exporter, Path: path, Endpoint: t.OCSF.Endpoint}, telemetry.QueueOptions{Logger: logger})
			if err != nil {
				return fail(fmt.Errorf("telemetry.ocsf: %w", err))
			}
			opts.OCSFSink, opts.OCSFProfile = q, ocsf.Profile(t.OCSF.Profile)
			// The queue drains, then closes its file.
			opened(closerFunc(func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return q.Close(ctx)
			}))
		}
		rec = telemetry.NewRecorder(opts)
		rs.Spans = rec
		if rs.Metrics != nil {
			rs.Metrics.Recording = rec
		}
	}
	if a.Enabled {
		path := a.Path
		if path == "" {
			var err error
			if path, err = inDataDir(defaultAuditFile(a.Backend, inDataDir)); err != nil {
				return fail(fmt.Errorf("gateway.audit: %w", err))
			}
		}
		ck, err := checkpointOptions(a)
		if err != nil {
			return fail(fmt.Errorf("gateway.audit: %w", err))
		}
		// The witnesses are the log's once it opens; until then, the build's.
		witness := ck.Witness
		l.provide(closerFunc(func() error {
			if witness == nil {
				return nil
			}
			return witness.Close()
		}))
		log, err := audit.Open(context.Background(), audit.Kind(a.Backend), path, audit.Options{Logger: logger, Checkpoint: ck})
		if err != nil {
			return fail(fmt.Errorf("gateway.audit: %w", err))
		}
		witness = nil
		rs.Audit = log
		opened(log) // last: after every record is in
	}
	return rs, closers, nil
}

// defaultAuditFile is the audit log's name in the data directory:
// audit.jsonl, or audit.db for backend sqlite, and for the default backend
// when an audit.db is there (the default until the group-commit file was:
// audit.Open then goes on with it as SQLite).
func defaultAuditFile(backend string, inDataDir func(string) (string, error)) string {
	switch backend {
	case "sqlite":
		return "audit.db"
	case "":
		if p, err := inDataDir("audit.db"); err == nil {
			if _, err := os.Stat(p); err == nil {
				return "audit.db"
			}
		}
	}
	return "audit.jsonl"
}

// checkpointOptions loads the audit key and opens the witnesses of a; the
// zero options (no checkpoints) without a signing key.
func checkpointOptions(a config.AuditConfig) (audit.CheckpointOptions, error) {
	if a.SigningKey == "" {
		return audit.CheckpointOptions{}, nil
	}
	key, err := audit.LoadSigningKey(a.SigningKey)
	if err != nil {
		return audit.CheckpointOptions{}, fmt.Errorf("signing_key: %w", err)
	}
	ck := audit.CheckpointOptions{Key: key, Every: a.CheckpointEvery, Interval: a.CheckpointInterval}
	var ws audit.Witnesses
	if a.Witness != "" {
		// The log must hold the last checkpoint the witness got.
		if fi, err := os.Stat(a.Witness); err == nil && fi.Size() > 0 {
			cs, err := audit.ReadWitness(a.Witness)
			if err != nil {
				return audit.CheckpointOptions{}, fmt.Errorf("witness: %w", err)
			}
			if len(cs) > 0 {
				ck.Witnessed = &cs[len(cs)-1]
			}
		}
		w, err := audit.NewFileWitness(a.Witness)
		if err != nil {
			return audit.CheckpointOptions{}, fmt.Errorf("witness: %w", err)
		}
		ws = append(ws, w)
	}
	if a.WitnessURL != "" {
		ws = append(ws, &audit.HTTPWitness{URL: a.WitnessURL})
	}
	if len(ws) > 0 {
		ck.Witness = ws
	}
	return ck, nil
}

// serverURLs returns the URL of each HTTP upstream, by name, as spans and
// OCSF events may show it: scheme, host and path. The query is left out,
// since it may carry a key (the configuration refuses credentials in the
// URL itself, but not in its query).
func serverURLs(upstreams []config.Upstream) map[string]string {
	urls := make(map[string]string, len(upstreams))
	for _, u := range upstreams {
		if u.URL == "" {
			continue
		}
		p, err := url.Parse(u.URL)
		if err != nil {
			continue
		}
		urls[u.Name] = (&url.URL{Scheme: p.Scheme, Host: p.Host, Path: p.Path, RawPath: p.RawPath}).String()
	}
	return urls
}

// serverTransports names the transport of each upstream as telemetry does:
// stdio for a command, streamable_http for a URL.
func serverTransports(upstreams []config.Upstream) map[string]string {
	ts := make(map[string]string, len(upstreams))
	for _, u := range upstreams {
		switch u.Transport() {
		case config.TransportStdio:
			ts[u.Name] = telemetry.TransportStdio
		case config.TransportHTTP:
			ts[u.Name] = telemetry.TransportStreamableHTTP
		}
	}
	return ts
}
