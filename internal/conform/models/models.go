// Package models holds AgentConform's built-in protocol models, embedded
// from YAML: one per protocol (MCP, A2A, ANP, ACP-Cap, ACP-Client) and the
// five composition models of AgentRFC §6.3. Every model also has a variant
// behind the warden gateway (ir.Model.Guarded), in which its properties are
// expected to hold.
//
// The models are parsed and linted against the clause catalog once; the
// returned models are shared and must not be modified.
package models

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/ir"
)

//go:embed builtin/*.yaml
var embedded embed.FS

// Order is the order models are listed and checked in: the five protocols
// in matrix order, then the compositions by pattern number.
var Order = []string{"mcp", "a2a", "anp", "acp-cap", "acp-client",
	"cs1-tool-delegation", "cs2-chained-tools", "cs3-consent-bypass", "cs4-delegation-capability", "cs5-federated"}

var (
	once   sync.Once
	loaded []*ir.Model
	errAll error
)

// Source returns the YAML of a built-in model and its file name.
func Source(name string) ([]byte, string, error) {
	file := path.Join("builtin", name+".yaml")
	data, err := fs.ReadFile(embedded, file)
	if err != nil {
		return nil, "", fmt.Errorf("no built-in model %q (have: %s)", name, strings.Join(Order, ", "))
	}
	return data, file, nil
}

// All returns every built-in model, in Order. An error means a built-in
// model has lint errors (this package's tests prevent that).
func All() ([]*ir.Model, error) {
	once.Do(func() {
		cat, err := catalog.Default()
		if err != nil {
			errAll = err
			return
		}
		entries, _ := fs.ReadDir(embedded, "builtin")
		var names []string
		for _, e := range entries {
			names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
		}
		sort.Slice(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
		for _, n := range names {
			data, file, _ := Source(n)
			m, ds := ir.Load(data, file, ir.LintOptions{Clause: cat.Has})
			if ds.HasErrors() {
				errAll = fmt.Errorf("built-in model %s:\n%s", n, ds)
				return
			}
			loaded = append(loaded, m)
		}
	})
	return loaded, errAll
}

func rank(name string) int {
	for i, n := range Order {
		if n == name {
			return i
		}
	}
	return len(Order)
}

// Get returns the built-in model named name. "NAME+warden" returns its
// variant behind the gateway.
func Get(name string) (*ir.Model, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	base, guarded := strings.CutSuffix(name, "+warden")
	for _, m := range all {
		if m.Name == base {
			if guarded {
				return m.Guarded(), nil
			}
			return m, nil
		}
	}
	return nil, fmt.Errorf("no built-in model %q (have: %s)", name, strings.Join(Order, ", "))
}
