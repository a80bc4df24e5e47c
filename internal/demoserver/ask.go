package demoserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ask_user makes the server ask its client something in the middle of a
// tool call, which is what a gateway has to relay in the other direction.
//
// The handler does not send elicitation/create or sampling/createMessage
// itself. It returns them as input requests (SEP-2322) and is called again
// with the answers, and the SDK picks the wire form by the session's
// protocol revision:
//
//	2025-11-25 and older   the SDK sends a real server->client request
//	                       (elicitation/create or sampling/createMessage)
//	                       on the session and re-invokes the handler
//	2026-07-28             the result says input_required; the client
//	                       answers and retries tools/call with inputResponses
//
// A 2026-07-28 session may not carry server->client requests at all, so
// calling req.Session.Elicit directly would work only on the old revisions.

//lint:file-ignore SA1019 sampling is deprecated from 2026-07-28 but ask_user falls back to it on purpose

// askRequestID names ask_user's one input request.
const askRequestID = "answer"

// askSamplingMaxTokens bounds the sampled answer.
const askSamplingMaxTokens = 1024

type askInput struct {
	Question string `json:"question" jsonschema:"the question to put to the user"`
}

// askOutput is ask_user's structured output.
type askOutput struct {
	Answer string `json:"answer" jsonschema:"what the client answered; empty unless action is accept"`
	Method string `json:"method" jsonschema:"how the question was asked: elicitation or sampling"`
	Action string `json:"action" jsonschema:"accept, decline or cancel"`
}

// answerSchema returns the form ask_user elicits: one string.
func answerSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"answer": {Type: "string", Description: "Your answer"},
		},
		Required: []string{"answer"},
	}
}

// addAskUser registers ask_user.
func (d *demo) addAskUser(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:  "ask_user",
		Title: "Ask the user",
		Description: "Asks the user a question through the client and returns the answer. " +
			"Uses elicitation when the client supports it, otherwise sampling.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, askUser)
}

func askUser(_ context.Context, req *mcp.CallToolRequest, in askInput) (*mcp.CallToolResult, askOutput, error) {
	if resp, ok := req.Params.InputResponses[askRequestID]; ok {
		return answer(resp)
	}
	caps := req.ClientCapabilities()
	switch {
	case caps != nil && supportsFormElicitation(caps.Elicitation):
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			askRequestID: &mcp.ElicitParams{Message: in.Question, RequestedSchema: answerSchema()},
		}}, askOutput{}, nil
	case caps != nil && caps.Sampling != nil:
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			askRequestID: &mcp.CreateMessageParams{
				Messages:     []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Question}}},
				SystemPrompt: "A tool needs an answer from the user. Reply with the answer only.",
				MaxTokens:    askSamplingMaxTokens,
			},
		}}, askOutput{}, nil
	}
	return nil, askOutput{}, errors.New("ask_user: the client supports neither elicitation nor sampling, so there is no way to ask the user")
}

// supportsFormElicitation reports whether elicitation capabilities c allow
// a form. An empty {} means form, for clients older than 2025-11-25.
func supportsFormElicitation(c *mcp.ElicitationCapabilities) bool {
	return c != nil && (c.Form != nil || c.URL == nil)
}

// answer turns the client's response into ask_user's result.
func answer(resp mcp.InputResponse) (*mcp.CallToolResult, askOutput, error) {
	switch r := resp.(type) {
	case *mcp.ElicitResult:
		out := askOutput{Method: "elicitation", Action: r.Action}
		if r.Action != "accept" {
			return textResult(fmt.Sprintf("The user did not answer (%s).", r.Action)), out, nil
		}
		s, ok := r.Content["answer"].(string)
		if !ok {
			return nil, askOutput{}, errors.New("ask_user: the elicitation result has no string \"answer\"")
		}
		out.Answer = s
		return textResult(s), out, nil
	case *mcp.CreateMessageWithToolsResult:
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				return textResult(t.Text), askOutput{Answer: t.Text, Method: "sampling", Action: "accept"}, nil
			}
		}
		return nil, askOutput{}, errors.New("ask_user: the sampling result holds no text")
	}
	return nil, askOutput{}, fmt.Errorf("ask_user: unexpected answer of type %T", resp)
}
