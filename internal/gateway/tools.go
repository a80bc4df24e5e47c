package gateway

import (
	"encoding/json"
	"sync"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// toolIndex remembers what an upstream's tools/list answers said about each
// tool. For now that is the SEP-2243 header bindings the listener checks;
// manifest pinning will keep its hashes here too. One index serves every
// session of an upstream, so a stateless request can be checked against a
// list that another request fetched.
type toolIndex struct {
	mu          sync.RWMutex
	bindings    map[string][]mcp.ParamBinding // by tool name; guarded by mu
	annotations map[string]map[string]any     // by tool name; guarded by mu
	description map[string]string             // by tool name; guarded by mu
	schemaHash  map[string]string             // SchemaHash of inputSchema, by tool name; guarded by mu
	names       toolNames                     // the listed names by toolKey, for look-alikes; guarded by mu
}

func newToolIndex() *toolIndex {
	return &toolIndex{bindings: make(map[string][]mcp.ParamBinding), annotations: make(map[string]map[string]any),
		description: make(map[string]string), schemaHash: make(map[string]string), names: toolNames{}}
}

// learn records the tools of one tools/list result (one page of it).
func (x *toolIndex) learn(method string, result []byte) {
	if method != mcp.MethodToolsList {
		return
	}
	var page struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Annotations map[string]any  `json:"annotations"`
			Description string          `json:"description"`
		} `json:"tools"`
	}
	// Member names are matched exactly, as the pin and security stages
	// read them: a "Description" or "annotationſ" fills nothing here, so an
	// approver is shown only what the stages inspected.
	if jsonrpc.Unmarshal(result, &page) != nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range page.Tools {
		if t.Name != "" {
			x.names.add(t.Name)
			x.bindings[t.Name] = mcp.ParamBindings(t.InputSchema)
			x.annotations[t.Name] = t.Annotations
			x.description[t.Name] = t.Description
			if h, err := zerotrust.SchemaHash(t.InputSchema); err == nil {
				x.schemaHash[t.Name] = h
			} else {
				delete(x.schemaHash, t.Name) // unhashable: hybrid tokens for it fail
			}
		}
	}
}

// paramBindings returns the header bindings of tool, if its definition has
// been seen.
func (x *toolIndex) paramBindings(tool string) ([]mcp.ParamBinding, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	b, ok := x.bindings[tool]
	return b, ok
}

// toolAnnotations returns the annotations of tool, nil if none were seen.
// The map is shared: callers must not modify it.
func (x *toolIndex) toolAnnotations(tool string) map[string]any {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.annotations[tool]
}

// toolDescription returns the description of tool, "" if none was seen.
func (x *toolIndex) toolDescription(tool string) string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.description[tool]
}

// toolSchemaHash returns SchemaHash of tool's inputSchema, "" if unknown.
func (x *toolIndex) toolSchemaHash(tool string) string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.schemaHash[tool]
}

// variant returns the listed tool that tool, whose toolKey is key, only
// looks like: another name with that key. A name the upstream listed
// itself is no variant.
func (x *toolIndex) variant(tool, key string) (string, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if _, listed := x.description[tool]; listed {
		return "", false
	}
	return x.names.variantOf(tool, key)
}

// info is what stages may look up about the upstream's tools.
func (x *toolIndex) info() ToolInfo {
	return ToolInfo{Annotations: x.toolAnnotations, Description: x.toolDescription, SchemaHash: x.toolSchemaHash,
		Variant: x.variant}
}
