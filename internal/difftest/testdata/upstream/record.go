package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
)

// The oracle file: one JSON object per line, appended by every process
// that names it. Two kinds:
//
//	{"kind":"wire","sdk","pid","line"}   a line read from stdin, before the SDK sees it
//	{"kind":"call","sdk","pid","tool","arguments","effect","meta_keys","meta"}
//	                                     a tool handler ran
//
// The test reads it as "what the upstream actually received and did".

// transfer is what transfer_funds acts on, as the SDK bound it.
type transfer struct {
	Source      string  `json:"source"`
	Amount      float64 `json:"amount"`
	Destination string  `json:"destination"`
}

type callRecord struct {
	Kind      string          `json:"kind"`
	SDK       string          `json:"sdk"`
	PID       int             `json:"pid"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Effect    *transfer       `json:"effect,omitempty"`
	MetaKeys  []string        `json:"meta_keys"`
	Meta      json.RawMessage `json:"meta"`
}

type wireRecord struct {
	Kind string `json:"kind"`
	SDK  string `json:"sdk"`
	PID  int    `json:"pid"`
	Line string `json:"line"`
}

// recorder appends records to the oracle file, one write per line.
type recorder struct {
	sdk string

	mu   sync.Mutex
	f    *os.File
	wire []byte // an incomplete stdin line; guarded by mu
}

func openRecorder(sdk string) (*recorder, error) {
	path := os.Getenv("DIFFTEST_ORACLE")
	if path == "" {
		return nil, fmt.Errorf("DIFFTEST_ORACLE is not set")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &recorder{sdk: sdk, f: f}, nil
}

func (r *recorder) append(v any) {
	line, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(line, '\n')); err != nil {
		panic(err)
	}
}

// call records one run of a tool handler. arguments and meta are JSON as
// the SDK delivered them (nil: absent).
func (r *recorder) call(tool string, arguments, meta json.RawMessage, effect *transfer) {
	keys := []string{}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) == nil {
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	if len(arguments) == 0 {
		arguments = json.RawMessage("null")
	}
	if len(meta) == 0 {
		meta = json.RawMessage("null")
	}
	r.append(callRecord{Kind: "call", SDK: r.sdk, PID: os.Getpid(), Tool: tool,
		Arguments: arguments, Effect: effect, MetaKeys: keys, Meta: meta})
}

// Write implements io.Writer for the tee on stdin: each complete line is
// recorded as it is read, before the SDK decodes it.
func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.wire = append(r.wire, p...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(r.wire, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, bytes.Clone(r.wire[:i]))
		r.wire = r.wire[i+1:]
	}
	r.mu.Unlock()
	for _, l := range lines {
		r.append(wireRecord{Kind: "wire", SDK: r.sdk, PID: os.Getpid(), Line: string(l)})
	}
	return len(p), nil
}

func mustJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
