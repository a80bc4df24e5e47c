package replay

// The A2A probes of counterexamples that need the replay's own adversary
// (a2a_setup.go): P2 (a forged agent card), P3 (an amplified delegation),
// and P5 (a task worked on with no consent step).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentwarden/warden/internal/a2agw"
)

// a2aAmplifiedDelegation replays C_authenticate → C_send_message →
// S_start_work → S_delegate → A_amplify: agent A, granted [read] by the
// principal, passes [read exec] on to the target. A control send with a
// chain within the grant must be served first, or the probe cannot tell a
// refusal of the amplification from a refusal of everything.
func a2aAmplifiedDelegation(ctx context.Context, t *Target, tr *Trace, o Options) Result {
	c, err := newA2A(t, o)
	if err != nil {
		return unrealisable(err.Error())
	}
	if t.a2a == nil {
		return unrealisable("replay set up no delegation keys for this target")
	}
	steps := []Step{c.authStep()}
	send := func(amplify bool) (json.RawMessage, *a2aAnswer, error) {
		chain, err := t.a2a.chain(amplify)
		if err != nil {
			return nil, nil, err
		}
		method, params := a2aTemplate(tr, "C_send_message", a2aSendTemplate)
		msg, _ := params["message"].(map[string]any)
		if msg == nil {
			return nil, nil, fmt.Errorf("the C_send_message template has no message")
		}
		msg["metadata"] = map[string]any{a2agw.MetadataKey: chain}
		return c.call(ctx, method, params, c.auth())
	}
	sent, ctl, err := send(false)
	if err != nil {
		return unrealisable(err.Error(), steps...)
	}
	steps = append(steps, Step{Action: "S_delegate", Kind: "Protocol", Sent: sent, Answer: ctl.summary(),
		Note: "control: " + delegationRelay + " delegates [" + grantedScope + "] to " + delegationTarget + ", within its grant"})
	if failed, why := a2aFailed(ctl); failed {
		return inconclusive("the control, a delegation within the grant, got "+why, steps...)
	}
	if !ctl.served() {
		return unrealisable("a delegation within the grant was not served either ("+ctl.summary()+
			"), so a refusal of the amplified one would show nothing", steps...)
	}
	sent, ans, err := send(true)
	if err != nil {
		return unrealisable(err.Error(), steps...)
	}
	steps = append(steps, Step{Action: "A_amplify", Kind: "Adversary", Sent: sent, Answer: ans.summary(),
		Note: delegationRelay + " delegates [" + grantedScope + " " + amplifiedScope + "] to " + delegationTarget +
			", beyond the [" + grantedScope + "] it was granted (chain in message.metadata[\"" + a2agw.MetadataKey + "\"])"})
	switch {
	case ans == nil:
		return inconclusive("the amplified delegation got no answer", steps...)
	case ans.served():
		return Result{Outcome: Reproduced, Steps: steps, Evidence: "a delegation chain that widens [" + grantedScope + "] to [" +
			grantedScope + " " + amplifiedScope + "] at its second hop was served like the one within the grant (" + ans.summary() + ")"}
	}
	return Result{Outcome: Blocked, Steps: steps, Evidence: "the amplified delegation was refused (" + ans.summary() +
		") while the one within the grant was served"}
}

// a2aUnconsented replays C_send_message → S_start_work: a task sent with
// no consent step. Blocked means the agent (or a gateway) asked for input
// or approval first; any other refusal shows nothing about consent.
func a2aUnconsented(ctx context.Context, t *Target, tr *Trace, o Options) Result {
	if t.a2a != nil && t.a2a.consentURL != "" {
		ct := *t // behind warden: the mount where consent is configured
		ct.URL = t.a2a.consentURL
		t = &ct
	}
	c, err := newA2A(t, o)
	if err != nil {
		return unrealisable(err.Error())
	}
	method, params := a2aTemplate(tr, "C_send_message", a2aSendTemplate)
	sent, ans, err := c.call(ctx, method, params, c.auth())
	if err != nil {
		return unrealisable(err.Error())
	}
	steps := []Step{c.authStep(), {Action: "C_send_message", Kind: "Protocol", Sent: sent, Answer: ans.summary(),
		Note: "no person approved the task"},
		{Action: "S_start_work", Kind: "Protocol", Note: "oracle: the answer shows the task worked on, not held for input or approval"}}
	switch {
	case ans == nil:
		return inconclusive("the agent did not answer SendMessage", steps...)
	case ans.err != nil && consentRefusal(ans.err):
		return Result{Outcome: Blocked, Steps: steps, Evidence: "SendMessage was held for approval (" + ans.summary() + ")"}
	case ans.err != nil:
		// Not held for approval, and not worked on either: no verdict.
		return inconclusive("SendMessage was refused for another reason, or failed ("+ans.summary()+"): neither held for consent nor worked on", steps...)
	case !ans.served():
		_, why := a2aFailed(ans)
		return inconclusive("SendMessage got "+why, steps...)
	}
	state := taskState(ans.result)
	switch state {
	case "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED", "input-required", "auth-required":
		return Result{Outcome: Blocked, Steps: steps, Evidence: "the agent asked for input before working (" + state + ")"}
	case "":
		state = "a message answer"
	}
	return Result{Outcome: Reproduced, Steps: steps,
		Evidence: "a task nobody approved was worked on (" + state + "): no step asked for consent (" + ans.summary() + ")"}
}

func consentRefusal(e *a2aError) bool {
	m := strings.ToLower(e.Message + " " + e.Data.Stage + " " + e.Data.Rule)
	return strings.Contains(m, "approv") || strings.Contains(m, "consent")
}

// taskState reads the task state of a SendMessage result: 1.0
// {"task":{"status":{"state"}}}, 0.3 {"kind":"task","status":{"state"}}.
// "" means the result is not a task (a message answer).
func taskState(result json.RawMessage) string {
	var r struct {
		Task *struct {
			Status struct{ State string } `json:"status"`
		} `json:"task"`
		Kind   string                 `json:"kind"`
		Status struct{ State string } `json:"status"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ""
	}
	if r.Task != nil {
		return r.Task.Status.State
	}
	if r.Kind == "task" {
		return r.Status.State
	}
	return ""
}

// a2aForgedCard replays A_forge_card → C_use_card. The client reads the
// genuine card (a gateway in the path pins it), the attacker arms the
// forger, and the client reads the card again and sends a task. Reproduced
// means the forged card reached the client.
func a2aForgedCard(ctx context.Context, t *Target, tr *Trace, o Options) Result {
	c, err := newA2A(t, o)
	if err != nil {
		return unrealisable(err.Error())
	}
	s := t.a2a
	if s == nil {
		return unrealisable("replay has no attacker in the agent card's path on this target")
	}
	first := readCard(ctx, c, s.cardURL)
	steps := []Step{{Action: "probe: read the agent card", Answer: first.summary(), Note: "GET " + s.cardURL + " before the forgery"}}
	if failed, why := cardFailed(first); failed {
		return inconclusive(why+" (before the forgery)", steps...)
	}
	if first.status != http.StatusOK {
		return unrealisable("the genuine agent card could not be read ("+first.summary()+")", steps...)
	}
	s.forger.arm(true)
	defer func() {
		s.forger.arm(false)
		if s.refresh != nil {
			_ = s.refresh(context.WithoutCancel(ctx)) // the genuine card again, for whatever runs next
		}
	}()
	note := "the attacker in the card's path adds the skill " + forgedSkill + " in transit; signatures are left as they were"
	if s.refresh != nil {
		note += "; the gateway fetched the card again, as when its card TTL lapses"
		if err := s.refresh(ctx); err != nil {
			note += " (" + clip(err.Error(), 200) + ")"
		}
	}
	steps = append(steps, Step{Action: "A_forge_card", Kind: "Adversary", Note: note})
	card := readCard(ctx, c, s.cardURL)
	method, params := a2aTemplate(tr, "C_send_message", a2aSendTemplate)
	sent, ans, _ := c.call(ctx, method, params, c.auth())
	steps = append(steps, Step{Action: "C_use_card", Kind: "Protocol", Answer: card.summary(), Note: "GET " + s.cardURL},
		Step{Action: "C_use_card", Kind: "Protocol", Sent: sent, Answer: ans.summary(), Note: "a task for the agent the card describes"})
	switch {
	case card == nil:
		return inconclusive("the card could not be read after the forgery", steps...)
	case card.forged():
		return Result{Outcome: Reproduced, Steps: steps, Evidence: "the forged agent card (skill " + forgedSkill +
			" added in transit) reached the client unrefused; a task sent on its strength: " + ans.summary()}
	}
	if failed, why := cardFailed(card); failed {
		return inconclusive(why+" (after the forgery)", steps...)
	}
	return Result{Outcome: Blocked, Steps: steps, Evidence: "the forged card did not reach the client (" + card.summary() +
		"); a task sent on its strength: " + ans.summary()}
}

// cardAnswer is what came back for a GET of the agent card.
type cardAnswer struct {
	status int
	body   []byte
}

func (a *cardAnswer) forged() bool {
	return a != nil && a.status == http.StatusOK && strings.Contains(string(a.body), forgedSkill)
}

func (a *cardAnswer) summary() string {
	if a == nil {
		return "no answer"
	}
	var rpc struct {
		Error *a2aError `json:"error"`
	}
	if a.status != http.StatusOK {
		if json.Unmarshal(a.body, &rpc) == nil && rpc.Error != nil {
			return fmt.Sprintf("HTTP %d, %s", a.status, rpc.Error)
		}
		return fmt.Sprintf("HTTP %d: %s", a.status, clip(strings.TrimSpace(string(a.body)), 160))
	}
	var card struct {
		Name   string `json:"name"`
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	if json.Unmarshal(a.body, &card) != nil {
		return fmt.Sprintf("HTTP 200, not a JSON card: %s", clip(string(a.body), 120))
	}
	var ids []string
	for _, sk := range card.Skills {
		ids = append(ids, sk.ID)
	}
	return fmt.Sprintf("HTTP 200, card %q with skills [%s]", card.Name, strings.Join(ids, " "))
}

// readCard GETs the card; nil when nothing answered in time.
func readCard(ctx context.Context, c *a2aClient, url string) *cardAnswer {
	ctx, cancel := context.WithTimeout(ctx, c.o.step())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient(c.t).Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return &cardAnswer{status: resp.StatusCode, body: body}
}
