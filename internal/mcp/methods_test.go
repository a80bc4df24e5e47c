package mcp

import "testing"

// Every method warden names is a known method; a made-up one, or one in
// another case, is not.
func TestKnownMethod(t *testing.T) {
	for _, m := range []string{MethodInitialize, MethodPing, MethodDiscover, MethodToolsList, MethodToolsCall,
		MethodResourcesRead, MethodResourcesSubscribe, MethodPromptsGet, MethodSubscriptionsListen,
		MethodSamplingCreate, MethodElicitationCreate, MethodRootsList, NotificationInitialized,
		NotificationCancelled, NotificationProgress, NotificationToolsListChanged} {
		if !KnownMethod(m) {
			t.Errorf("%s is not known", m)
		}
	}
	for _, m := range []string{"", "tools/Call", "made/up", "x-vendor/thing", "notifications/made-up"} {
		if KnownMethod(m) {
			t.Errorf("%q is known", m)
		}
	}
}
