package a2agw

import (
	"context"
	"strconv"
	"sync"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

// The task-owner stage. warden calls the upstream agent with its own
// identity, so the agent cannot tell warden's clients apart: any client that
// knows a task id could read the task (GetTask), follow it
// (SubscribeToTask), cancel it or continue it. With Options.Authenticate,
// warden keeps the ownership itself:
//
//	answer to principal P names task T / context C  ─►  T, C belong to P
//	request of P names task T                        ─►  T must belong to P
//	request of P names context C                     ─►  C must not belong to another
//	message of P references tasks T₁…Tₙ              ─►  each Tᵢ must belong to P
//	a member spelt so that the agent reads it as one  ─►  refused (the agent's
//	of those ("TaskId", "contextID", "taſkId")            encoding/json folds case)
//	ListTasks, tasks/list of P                       ─►  the agent's list, filtered to P's (list.go)
//
// A task id warden never saw in an answer to P (another principal's, or
// one from before a restart) is refused: ownership is not guessed. Context
// ids may be minted by clients, so an unknown one passes and becomes the
// sender's. Without Authenticate every client is the same principal and
// the stage does nothing.

// StageOwner is the stage that keeps each client to its own tasks.
const StageOwner = "task-owner"

// maxOwned bounds the remembered ids; the oldest are forgotten first (a
// forgotten task id is then refused to its owner too).
const maxOwned = 1 << 17

// Where a request names a task or a context, and where an answer does.
var (
	ownerTaskPaths    = [][]string{{"id"}, {"taskId"}, {"message", "taskId"}}
	ownerContextPaths = [][]string{{"contextId"}, {"message", "contextId"}}
	// ownerRefsPath is the tasks a message references: a2a-go loads each
	// into the execution (ReferencedTasksLoader), so they are read.
	ownerRefsPath = []string{"message", "referenceTaskIds"}
	// pushTaskPaths replace ownerTaskPaths for the 1.0 push config methods,
	// whose params.id is the config's own id, not a task's.
	pushTaskPaths   = [][]string{{"taskId"}}
	pushTaskMethods = map[string]bool{"CreateTaskPushNotificationConfig": true, "GetTaskPushNotificationConfig": true,
		"ListTaskPushNotificationConfigs": true, "DeleteTaskPushNotificationConfig": true}
	// ownerMembers are the members the stage reads, in params and in
	// params.message; the objects where another spelling of them is refused.
	ownerMembers      = []string{"id", "taskId", "contextId", "referenceTaskIds"}
	ownerObjects      = [][]string{{}, {"message"}}
	answerTaskPaths   = resultTaskPaths
	answerContextPath = [][]string{{"task", "contextId"}, {"statusUpdate", "contextId"}, {"artifactUpdate", "contextId"},
		{"message", "contextId"}, {"contextId"}}
	listMethods = map[string]bool{"ListTasks": true, "tasks/list": true}
)

// owners maps task and context ids to the principal whose answers named
// them first. The zero value is ready to use; it is safe for concurrent use.
type owners struct {
	mu    sync.Mutex
	owner map[string]string // "t:ID" or "c:ID" → principal; guarded by mu
	order []string          // keys in the order they were added, for eviction; guarded by mu
}

// of returns the owner of key and whether there is one.
func (o *owners) of(key string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.owner[key]
	return p, ok
}

// claim gives key to principal unless it has an owner.
func (o *owners) claim(key, principal string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.owner == nil {
		o.owner = map[string]string{}
	}
	if _, ok := o.owner[key]; ok {
		return
	}
	if len(o.order) >= maxOwned {
		delete(o.owner, o.order[0])
		o.order = o.order[1:]
	}
	o.owner[key] = principal
	o.order = append(o.order, key)
}

// checkOwner is the "task-owner" stage.
func (h *Handler) checkOwner(_ context.Context, c *call) *deny.Denial {
	if h.opts.Authenticate == nil {
		return nil
	}
	refuse := func(reason string) *deny.Denial {
		return &deny.Denial{Stage: StageOwner, Rule: deny.RuleTaskOwner, Reason: reason}
	}
	if name, path, want := caseVariant(c.msg.Params, ownerObjects, ownerMembers); name != "" {
		at := "params" + path + "." + name
		return refuse(at + " is another spelling of " + want + ", which the agent may read as it: name the task or context as " + want)
	}
	taskPaths := ownerTaskPaths
	if pushTaskMethods[c.msg.Method] {
		taskPaths = pushTaskPaths
	}
	ids := stringsAt(c.msg.Params, taskPaths)
	if raw, ok := jsonrpc.Lookup(c.msg.Params, ownerRefsPath...); ok {
		bad := false
		isArray := jsonrpc.Elements(raw, func(el []byte) {
			s, ok := jsonrpc.String(el)
			bad = bad || !ok
			ids = append(ids, s)
		})
		if bad || !isArray {
			return refuse(`params.message.referenceTaskIds must be an array of task ids`)
		}
	}
	for _, id := range ids {
		if p, ok := h.owned.of("t:" + id); !ok || p != c.principal {
			return refuse("task " + strconv.Quote(id) + " was not started through this gateway by this client")
		}
	}
	for _, id := range stringsAt(c.msg.Params, ownerContextPaths) {
		if p, ok := h.owned.of("c:" + id); ok && p != c.principal {
			return refuse("context " + strconv.Quote(id) + " belongs to another client")
		}
	}
	if listMethods[c.msg.Method] {
		q, d := h.readList(c.principal, c.msg.Method, c.msg.Params)
		if d != nil {
			return d
		}
		c.list = q
	}
	return nil
}

// noteOwner gives the task and context ids an answer to c names to c's
// principal, and the context its message named.
func (h *Handler) noteOwner(c *call, result []byte) {
	if h.opts.Authenticate == nil || result == nil {
		return
	}
	taskPaths := answerTaskPaths
	if pushTaskMethods[c.msg.Method] { // the answer is a push config: its id is not a task's
		taskPaths = pushTaskPaths
	}
	for _, id := range stringsAt(result, taskPaths) {
		h.owned.claim("t:"+id, c.principal)
	}
	for _, id := range stringsAt(result, answerContextPath) {
		h.owned.claim("c:"+id, c.principal)
	}
	for _, id := range stringsAt(c.msg.Params, ownerContextPaths) {
		h.owned.claim("c:"+id, c.principal)
	}
}

// caseVariant returns the first member of params, or of an object at one
// of objects within it, whose name is not one of members but that Go's
// encoding/json (which folds case, "ſ" and "K") would read as one, the
// object's path (".message" or ""), and the member it stands for.
func caseVariant(params []byte, objects [][]string, members []string) (name, path, want string) {
	for _, obj := range objects {
		v := params
		if len(obj) > 0 {
			var ok bool
			if v, ok = jsonrpc.Lookup(params, obj...); !ok {
				continue
			}
		}
		jsonrpc.Members(v, func(n string, _ []byte) {
			if name == "" {
				if m := foldsTo(n, members); m != "" && m != n {
					name, want = n, m
				}
			}
		})
		if name != "" {
			for _, o := range obj {
				path += "." + o
			}
			return name, path, want
		}
	}
	return "", "", ""
}

// foldsTo returns the one of members that name folds to as Go's
// encoding/json folds names, or "" (name itself when it is one).
func foldsTo(name string, members []string) string {
	for _, m := range members {
		if name == m || jsonrpc.Fold(name) == jsonrpc.Fold(m) || jsonrpc.FoldFull(name) == jsonrpc.FoldFull(m) {
			return m
		}
	}
	return ""
}

// stringsAt returns every string found at one of paths in v: a request
// that names a task twice (params.id and params.message.taskId) is checked
// for both, whichever the agent reads.
func stringsAt(v []byte, paths [][]string) []string {
	var out []string
	for _, p := range paths {
		if raw, ok := jsonrpc.Lookup(v, p...); ok {
			if s, ok := jsonrpc.String(raw); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
