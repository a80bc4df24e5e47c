//go:build integration

package a2agw

import (
	"context"
	"iter"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// gatedAgent starts a task, reports it working, and finishes it (an
// artifact, then completed) only once release is closed.
type gatedAgent struct{ release chan struct{} }

func (a gatedAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		select {
		case <-a.release:
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("report ready")), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (gatedAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return echoAgent{}.Cancel(ctx, ec)
}

// TestSubscribeToTaskThroughTheGateway (AgentRFC SL, resume where the
// protocol has it): a client that left a task running (SendMessage with
// returnImmediately) comes back with SubscribeToTask through the gateway
// and gets the rest of the task, artifact and completion, from the a2a-go
// agent; each streamed event is recorded with its task.
func TestSubscribeToTaskThroughTheGateway(t *testing.T) {
	agent := gatedAgent{release: make(chan struct{})}
	up := startAgent(t, a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(agent)))
	up.setCard(echoCard(t, up, "finishes when released", nil))
	g := startGateway(t, up, nil)
	ctx := t.Context()

	card, err := agentcard.DefaultResolver.Resolve(ctx, g.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Config: &a2a.SendMessageConfig{ReturnImmediately: true},
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("write the report"))})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State == a2a.TaskStateCompleted {
		t.Fatalf("SendMessage with returnImmediately = %#v; want a task still running", res)
	}

	hits := up.hits.Load()
	var states []a2a.TaskState
	var artifact string
	first := true
	for ev, err := range client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatalf("SubscribeToTask through the gateway: %v (states so far %v)", err, states)
		}
		if first { // subscribed: now let the task finish
			close(agent.release)
			first = false
		}
		switch ev := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
		case *a2a.TaskArtifactUpdateEvent:
			artifact = ev.Artifact.Parts[0].Text()
		case *a2a.Task:
			if ev.ID != task.ID {
				t.Fatalf("subscribed to %s, got task %s", task.ID, ev.ID)
			}
		}
	}
	if first || artifact != "report ready" || len(states) == 0 || states[len(states)-1] != a2a.TaskStateCompleted {
		t.Fatalf("resubscribed: artifact %q, states %v; want the artifact and completed", artifact, states)
	}
	if up.hits.Load() != hits+1 {
		t.Errorf("SubscribeToTask did not go through the gateway to the agent")
	}
	if _, ok := g.rec.find(func(e Event) bool {
		return e.Direction == "upstream" && e.Method == "SubscribeToTask" && e.Decision == "allow" && e.TaskID == string(task.ID)
	}); !ok {
		t.Error("the resubscribed stream's events were not recorded with their task")
	}
}
