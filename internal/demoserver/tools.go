package demoserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputSchema infers the input schema of T, as mcp.AddTool would, and lets
// edit add the constraints that struct tags cannot express (ranges,
// defaults) to its properties.
func inputSchema[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("demoserver: input schema of %T: %v", *new(T), err))
	}
	if edit != nil {
		edit(s.Properties)
	}
	return s
}

// textResult is a successful tool result holding one text block.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

type echoInput struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

type slowCountInput struct {
	Count   int `json:"count" jsonschema:"how far to count, from 1 to 20"`
	DelayMS int `json:"delay_ms,omitempty" jsonschema:"milliseconds to wait before each step, from 0 to 1000; default 100"`
}

// addMiscTools registers get_env, echo and slow_count.
func (d *demo) addMiscTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "get_env",
		Title:       "Get environment",
		Description: "Returns the server's environment variables, one KEY=value per line.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, d.getEnv)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Title:       "Echo",
		Description: `Returns the message prefixed with "Echo: ".`,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, echo)

	mcp.AddTool(s, &mcp.Tool{
		Name:  "slow_count",
		Title: "Count slowly",
		Description: "Counts from 1 to count, waiting delay_ms before each step and sending a progress " +
			"notification per step when the request carries a progress token.",
		InputSchema: inputSchema[slowCountInput](func(p map[string]*jsonschema.Schema) {
			p["count"].Minimum, p["count"].Maximum = new(1.0), new(20.0)
			p["delay_ms"].Minimum, p["delay_ms"].Maximum = new(0.0), new(1000.0)
			p["delay_ms"].Default = []byte("100")
		}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, slowCount)
}

// getEnv reveals the environment. It is deliberately a secret leak, like
// the get-env tool of @modelcontextprotocol/server-everything: it returns
// API keys, tokens and anything else the server process holds, so that a
// gateway can demonstrate catching secrets (and prompt injections planted in
// variables) on their way back to the model. Lines are sorted so that the
// output is deterministic.
func (d *demo) getEnv(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	env := slices.Sorted(slices.Values(d.env()))
	return textResult(strings.Join(env, "\n")), nil, nil
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoInput) (*mcp.CallToolResult, any, error) {
	return textResult("Echo: " + in.Message), nil, nil
}

// slowCount counts to in.Count. With a progress token it sends one
// notifications/progress per step, in order, with progress i of total count.
func slowCount(ctx context.Context, req *mcp.CallToolRequest, in slowCountInput) (*mcp.CallToolResult, any, error) {
	token := req.Params.GetProgressToken()
	delay := time.Duration(in.DelayMS) * time.Millisecond
	for i := 1; i <= in.Count; i++ {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, nil, fmt.Errorf("slow_count cancelled at step %d: %w", i, ctx.Err())
			case <-t.C:
			}
		}
		if token == nil {
			continue
		}
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      float64(i),
			Total:         float64(in.Count),
			Message:       fmt.Sprintf("step %d of %d", i, in.Count),
		})
		if err != nil {
			return nil, nil, fmt.Errorf("slow_count: sending progress: %w", err)
		}
	}
	return textResult(fmt.Sprintf("counted %d", in.Count)), nil, nil
}
