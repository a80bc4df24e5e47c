package gateway

import (
	"fmt"
	"sync"

	"github.com/agentwarden/warden/internal/transport"
)

// childAdmission returns the listener's Admit hook that bounds the live
// child processes of a stdio upstream (Upstream.MaxChildren), or nil when
// u has no bound. A stateful session runs a child of its own from its
// initialize until its relay has closed it, which is when the listener
// calls release; stateless requests share one child and are not counted.
// A session refused here never dials, so it starts no child.
func childAdmission(u *Upstream) func(transport.SessionInfo) (func(), *transport.Busy) {
	if u.MaxChildren <= 0 {
		return nil
	}
	var (
		mu   sync.Mutex // guards live
		live int
	)
	return func(info transport.SessionInfo) (func(), *transport.Busy) {
		if info.Stateless {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if live >= u.MaxChildren {
			return nil, &transport.Busy{Rule: transport.RuleChildLimit,
				Message: fmt.Sprintf("upstream %s runs its maximum of %d processes; retry later", quote(u.Name), u.MaxChildren)}
		}
		live++
		var once sync.Once
		return func() {
			once.Do(func() {
				mu.Lock()
				live--
				mu.Unlock()
			})
		}, nil
	}
}
