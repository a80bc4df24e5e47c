package replay

// The AG-UI adapter: POST a RunAgentInput to the agent's run endpoint and
// read the Server-Sent Events it streams back. AG-UI is not one of the
// matrix's five protocols; its probe checks the event stream's wire
// discipline (WF): every frame a JSON object with a type, RUN_STARTED
// first, RUN_FINISHED or RUN_ERROR last, start and end events paired.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/agentwarden/warden/internal/transport"
)

var aguiProbes = []probe{
	{model: "agui", property: "WF_events", principle: "WF", run: aguiRun},
}

// RunAgentInput is the body the adapter posts.
func runAgentInput(message string) map[string]any {
	return map[string]any{
		"threadId": "conform-thread", "runId": "conform-run",
		"messages":       []any{map[string]any{"id": "m1", "role": "user", "content": message}},
		"tools":          []any{},
		"context":        []any{},
		"state":          map[string]any{},
		"forwardedProps": map[string]any{},
	}
}

// AGUIMessage is the user message the probe sends (aimock fixtures match on
// it).
const AGUIMessage = "look up the weather"

// AGUIRunMethod names the run request in telemetry, as the attack runner
// names it.
const AGUIRunMethod = "run_agent_input"

func aguiRun(ctx context.Context, t *Target, _ *Trace, o Options) Result {
	body, _ := marshal(runAgentInput(AGUIMessage))
	sp := o.start(ctx, o.operation(t, AGUIRunMethod, body))
	ctx, cancel := context.WithTimeout(ctx, o.step())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		sp.unanswered("unsent")
		return unrealisable(err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := httpClient(t).Do(req)
	if err != nil {
		sp.unanswered("none")
		return unrealisable("the agent did not answer: " + err.Error())
	}
	defer resp.Body.Close()
	step := Step{Action: "C_run_agent", Kind: "Protocol", Sent: body}
	if resp.StatusCode/100 != 2 {
		sp.httpAnswered(resp.StatusCode, nil, nil)
		step.Answer = fmt.Sprintf("HTTP %d", resp.StatusCode)
		return unrealisable("the run was refused: "+step.Answer, step)
	}
	var types []string
	problems := checkEvents(transport.NewEventReader(io.LimitReader(resp.Body, 4<<20), 1<<20), &types)
	sp.httpAnswered(resp.StatusCode, nil, nil)
	step.Answer = fmt.Sprintf("%d events: %s", len(types), clip(strings.Join(types, " "), 200))
	if len(problems) > 0 {
		return Result{Outcome: Reproduced, Steps: []Step{step}, Evidence: "malformed event stream: " + strings.Join(problems, "; ")}
	}
	return Result{Outcome: Blocked, Steps: []Step{step}, Evidence: "the event stream is well formed"}
}

// checkEvents reads the stream and lists what breaks AG-UI's event
// discipline.
func checkEvents(er *transport.EventReader, types *[]string) []string {
	var problems []string
	open := map[string]int{} // "TEXT_MESSAGE:id", "TOOL_CALL:id" → starts minus ends
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			problems = append(problems, "stream: "+err.Error())
			break
		}
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			problems = append(problems, "a data frame is not JSON")
			continue
		}
		typ, _ := e["type"].(string)
		if typ == "" {
			problems = append(problems, "an event has no type")
			continue
		}
		if len(*types) == 0 && typ != "RUN_STARTED" {
			problems = append(problems, "the first event is "+typ+", not RUN_STARTED")
		}
		*types = append(*types, typ)
		for _, kind := range []struct{ prefix, id string }{{"TEXT_MESSAGE", "messageId"}, {"TOOL_CALL", "toolCallId"}} {
			id, _ := e[kind.id].(string)
			switch typ {
			case kind.prefix + "_START":
				open[kind.prefix+":"+id]++
			case kind.prefix + "_END":
				if open[kind.prefix+":"+id] == 0 {
					problems = append(problems, typ+" for "+id+" without a start")
				}
				open[kind.prefix+":"+id]--
			case kind.prefix + "_CONTENT", kind.prefix + "_ARGS":
				if open[kind.prefix+":"+id] <= 0 {
					problems = append(problems, typ+" for "+id+" outside its start and end")
				}
			}
		}
	}
	if n := len(*types); n == 0 {
		problems = append(problems, "no events")
	} else if last := (*types)[n-1]; last != "RUN_FINISHED" && last != "RUN_ERROR" {
		problems = append(problems, "the stream ends with "+last+", not RUN_FINISHED")
	}
	var unended []string
	for k, n := range open {
		if n > 0 {
			unended = append(unended, k+" never ended")
		}
	}
	slices.Sort(unended)
	problems = append(problems, unended...)
	return problems
}
